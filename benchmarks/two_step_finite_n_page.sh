#!/usr/bin/env bash
# Writes docs/benchmarks/two_step_finite_n.md (every section) and its three figures with
# benchmarks/bench_two_step_finite_n.py, keeping the page's introduction (the text above its first section).
#
#   bash benchmarks/two_step_finite_n_page.sh [CACHE_DIR]
#
# The simulated draws are kept in CACHE_DIR (default ./two_step_finite_n_cache); with the caches there the page is
# written again in about two minutes, without them every draw is simulated first (several hours on 2 cores).
# BACKEND=cupy simulates the draws on a CUDA device: the same inputs, drawn on the host from each seed, and float32
# steps on the device (the N = 2000 sections of 2026-12-04 were simulated so; their simulated columns match the host's
# at 78 of 80 rows digit for digit, the other two by one in the last digit).
# ONLY='REGEX' writes again only the sections whose titles match the extended regular expression and copies every
# other section of the page as it stands, e.g. after a change that moves the fresh batches' predictions alone:
#
#   ONLY='fresh second batch' bash benchmarks/two_step_finite_n_page.sh [CACHE_DIR]
#
# PAGE=FILE writes FILE instead of docs/benchmarks/two_step_finite_n.md (the figures stay under docs/benchmarks).
set -euo pipefail
cd "$(dirname "$0")/.."
C=${1:-two_step_finite_n_cache}
mkdir -p "$C"
export OPENBLAS_NUM_THREADS=1
PAGE=${PAGE:-docs/benchmarks/two_step_finite_n.md}
FIG=docs/benchmarks
awk '/^## /{exit} {print}' "$PAGE" > "$PAGE.new"
run() {
    local title="" prev="" x
    for x in "$@"; do [[ $prev == --title ]] && title=$x; prev=$x; done
    if [[ -n "${ONLY:-}" ]] && ! grep -qE -- "$ONLY" <<< "$title"; then    # kept as the page has it
        awk -v t="## $title" '$0 == t {on = 1; print; next} on && /^## / {exit} on {print}' "$PAGE" > "$PAGE.kept"
        if [[ ! -s "$PAGE.kept" ]]; then
            echo "ONLY: the section \"$title\" is not on $PAGE; write it (widen ONLY)" >&2
            rm -f "$PAGE.kept" "$PAGE.new"
            exit 2
        fi
        cat "$PAGE.kept" >> "$PAGE.new"
        rm -f "$PAGE.kept"
        return
    fi
    python -m benchmarks.bench_two_step_finite_n --backend "${BACKEND:-numpy}" --out "$PAGE.new" --append "$@" > /dev/null
}
G5="alpha in {0, 0.1, 0.2, 0.3, 0.4}^2"; G3="alpha in {0, 0.2, 0.4}^2"; G2="alpha in {0.2, 0.4}^2"
run --N 1000 --batches reused --cache "$C/n1000.json" --title "N = 1000, reused batch, grid $G5" --figure "$FIG/two_step_finite_n.png"
run --N 1000 --batches fresh --grid 0.0,0.2,0.4 --cache "$C/n1000.json" --title "N = 1000, fresh second batch, grid $G3" --figure "$FIG/two_step_finite_n_fresh.png"
OWN="seeds of its own at each point"
run --own-seeds --N 1000 --batches reused --cache "$C/n1000own.json" --title "N = 1000, reused batch, grid $G5, $OWN"
run --own-seeds --N 1000 --batches fresh --grid 0.0,0.2,0.4 --cache "$C/n1000own.json" --title "N = 1000, fresh second batch, grid $G3, $OWN"
run --N 2000 --batches reused --grid 0.2,0.4 --cache "$C/n2000.json" --title "N = 2000, reused batch, grid $G2"
run --seeds 13 --N 2000 --batches fresh --grid 0.2,0.4 --cache "$C/n2000.json" --title "N = 2000, fresh second batch, grid $G2, 13 draws"
run --own-seeds --N 2000 --batches reused --grid 0.2,0.4 --cache "$C/n2000own.json" --title "N = 2000, reused batch, grid $G2, $OWN"
run --own-seeds --seeds 13 --N 2000 --batches fresh --grid 0.2,0.4 --cache "$C/n2000own.json" --title "N = 2000, fresh second batch, grid $G2, 13 draws, $OWN"
run --activations relu --N 1000 --batches reused --cache "$C/relu1000r.json" --title "relu, N = 1000, reused batch, grid $G5" --figure "$FIG/two_step_finite_n_relu.png"
run --activations relu --N 1000 --batches fresh --grid 0.0,0.2,0.4 --cache "$C/relu1000f.json" --title "relu, N = 1000, fresh second batch, grid $G3"
run --seeds 13 --activations relu --N 2000 --batches reused --grid 0.2,0.4 --cache "$C/relu2000.json" --title "relu, N = 2000, reused batch, grid $G2, 13 draws"
run --seeds 13 --activations relu --N 2000 --batches fresh --grid 0.2,0.4 --cache "$C/relu2000.json" --title "relu, N = 2000, fresh second batch, grid $G2, 13 draws"
SH=(--seeds 13 --N 1000 --batches reused --grid 0.2,0.4 --activations "tanh;gelu;relu;hermite(0, 1, 0.5)")
run "${SH[@]}" --psi 0.5 --phi 1.5 --cache "$C/shape_a.json" --title "Other shapes: N = 1000, psi = 0.5, phi = 1.5 (n = phi d), reused batch, grid $G2, 13 draws"
run "${SH[@]}" --psi 2 --phi 4 --cache "$C/shape_b.json" --title "Other shapes: N = 1000, psi = 2, phi = 4 (n = phi d), reused batch, grid $G2, 13 draws"
SP=(--seeds 13 --N 1000 --activations "sigmoid;softplus" --cache "$C/sigmoid_softplus.json")
run "${SP[@]}" --batches reused --grid 0.0,0.2,0.4 --title "Other activations: sigmoid and softplus, N = 1000, reused batch, grid $G3, 13 draws"
run "${SP[@]}" --batches fresh --grid 0.2,0.4 --title "Other activations: sigmoid and softplus, N = 1000, fresh second batch, grid $G2, 13 draws"
run --N 500 --batches reused --cache "$C/n500r.json" --title "N = 500, reused batch, grid $G5"
run --N 500 --batches fresh --grid 0.0,0.2,0.4 --cache "$C/n500f.json" --title "N = 500, fresh second batch, grid $G3"
run --own-seeds --N 500 --batches reused --cache "$C/n500own.json" --title "N = 500, reused batch, grid $G5, $OWN"
run --own-seeds --N 500 --batches fresh --grid 0.0,0.2,0.4 --cache "$C/n500own.json" --title "N = 500, fresh second batch, grid $G3, $OWN"
run --activations relu --N 500 --batches reused --cache "$C/relu500r.json" --title "relu, N = 500, reused batch, grid $G5"
run --activations relu --N 500 --batches fresh --grid 0.0,0.2,0.4 --cache "$C/relu500f.json" --title "relu, N = 500, fresh second batch, grid $G3"
# the grids of N = 1000, 2000 and 500 with the shared draws and each point's own together (--pool; nothing simulated)
PL="seeds 1000–1024 and $OWN"
run --seeds 49 --N 1000 --batches reused --cache "$C/n1000.json" --pool "$C/n1000own.json" --title "N = 1000, reused batch, grid $G5, 49 draws: $PL"
run --seeds 49 --N 1000 --batches fresh --grid 0.0,0.2,0.4 --cache "$C/n1000.json" --pool "$C/n1000own.json" --title "N = 1000, fresh second batch, grid $G3, 49 draws: $PL"
run --seeds 49 --N 2000 --batches reused --grid 0.2,0.4 --cache "$C/n2000.json" --pool "$C/n2000own.json" --title "N = 2000, reused batch, grid $G2, 49 draws: $PL"
run --seeds 25 --N 2000 --batches fresh --grid 0.2,0.4 --cache "$C/n2000.json" --pool "$C/n2000own.json" --title "N = 2000, fresh second batch, grid $G2, 25 draws: seeds 1000–1012 and $OWN"
run --seeds 49 --N 500 --batches reused --cache "$C/n500r.json" --pool "$C/n500own.json" --title "N = 500, reused batch, grid $G5, 49 draws: $PL"
run --seeds 49 --N 500 --batches fresh --grid 0.0,0.2,0.4 --cache "$C/n500f.json" --pool "$C/n500own.json" --title "N = 500, fresh second batch, grid $G3, 49 draws: $PL"
# every grid again with the other way of taking the batch's most extreme samples (docs/theory/two_step.md §8.3),
# from the same draws: each a column of its own (--extreme-samples single) where the default groups them (reused
# batches), as one group (grouped) where it does not (fresh)
SI=(--extreme-samples single); ST="extreme samples single"; GR=(--extreme-samples grouped); GT="extreme samples grouped"
run "${SI[@]}" --N 1000 --batches reused --cache "$C/n1000.json" --title "N = 1000, reused batch, grid $G5, $ST" --figure "$FIG/two_step_finite_n_single.png"
run "${GR[@]}" --N 1000 --batches fresh --grid 0.0,0.2,0.4 --cache "$C/n1000.json" --title "N = 1000, fresh second batch, grid $G3, $GT"
run "${SI[@]}" --own-seeds --N 1000 --batches reused --cache "$C/n1000own.json" --title "N = 1000, reused batch, grid $G5, $OWN, $ST"
run "${GR[@]}" --own-seeds --N 1000 --batches fresh --grid 0.0,0.2,0.4 --cache "$C/n1000own.json" --title "N = 1000, fresh second batch, grid $G3, $OWN, $GT"
run "${SI[@]}" --N 2000 --batches reused --grid 0.2,0.4 --cache "$C/n2000.json" --title "N = 2000, reused batch, grid $G2, $ST"
run "${GR[@]}" --seeds 13 --N 2000 --batches fresh --grid 0.2,0.4 --cache "$C/n2000.json" --title "N = 2000, fresh second batch, grid $G2, 13 draws, $GT"
run "${SI[@]}" --own-seeds --N 2000 --batches reused --grid 0.2,0.4 --cache "$C/n2000own.json" --title "N = 2000, reused batch, grid $G2, $OWN, $ST"
run "${GR[@]}" --own-seeds --seeds 13 --N 2000 --batches fresh --grid 0.2,0.4 --cache "$C/n2000own.json" --title "N = 2000, fresh second batch, grid $G2, 13 draws, $OWN, $GT"
run "${SI[@]}" --N 500 --batches reused --cache "$C/n500r.json" --title "N = 500, reused batch, grid $G5, $ST"
run "${GR[@]}" --N 500 --batches fresh --grid 0.0,0.2,0.4 --cache "$C/n500f.json" --title "N = 500, fresh second batch, grid $G3, $GT"
run "${SI[@]}" --own-seeds --N 500 --batches reused --cache "$C/n500own.json" --title "N = 500, reused batch, grid $G5, $OWN, $ST"
run "${GR[@]}" --own-seeds --N 500 --batches fresh --grid 0.0,0.2,0.4 --cache "$C/n500own.json" --title "N = 500, fresh second batch, grid $G3, $OWN, $GT"
SSH=(--extreme-samples single --seeds 13 --N 1000 --batches reused --grid 0.2,0.4 --activations "tanh;gelu;relu;hermite(0, 1, 0.5)")
SP2=(--seeds 13 --N 1000 --activations "sigmoid;softplus" --cache "$C/sigmoid_softplus.json")
run "${SI[@]}" --activations relu --N 1000 --batches reused --cache "$C/relu1000r.json" --title "relu, N = 1000, reused batch, grid $G5, $ST"
run "${GR[@]}" --activations relu --N 1000 --batches fresh --grid 0.0,0.2,0.4 --cache "$C/relu1000f.json" --title "relu, N = 1000, fresh second batch, grid $G3, $GT"
run "${SI[@]}" --seeds 13 --activations relu --N 2000 --batches reused --grid 0.2,0.4 --cache "$C/relu2000.json" --title "relu, N = 2000, reused batch, grid $G2, 13 draws, $ST"
run "${GR[@]}" --seeds 13 --activations relu --N 2000 --batches fresh --grid 0.2,0.4 --cache "$C/relu2000.json" --title "relu, N = 2000, fresh second batch, grid $G2, 13 draws, $GT"
run "${SSH[@]}" --psi 0.5 --phi 1.5 --cache "$C/shape_a.json" --title "Other shapes: N = 1000, psi = 0.5, phi = 1.5 (n = phi d), reused batch, grid $G2, 13 draws, $ST"
run "${SSH[@]}" --psi 2 --phi 4 --cache "$C/shape_b.json" --title "Other shapes: N = 1000, psi = 2, phi = 4 (n = phi d), reused batch, grid $G2, 13 draws, $ST"
run "${SI[@]}" "${SP2[@]}" --batches reused --grid 0.0,0.2,0.4 --title "Other activations: sigmoid and softplus, N = 1000, reused batch, grid $G3, 13 draws, $ST"
run "${GR[@]}" "${SP2[@]}" --batches fresh --grid 0.2,0.4 --title "Other activations: sigmoid and softplus, N = 1000, fresh second batch, grid $G2, 13 draws, $GT"
run "${SI[@]}" --activations relu --N 500 --batches reused --cache "$C/relu500r.json" --title "relu, N = 500, reused batch, grid $G5, $ST"
run "${GR[@]}" --activations relu --N 500 --batches fresh --grid 0.0,0.2,0.4 --cache "$C/relu500f.json" --title "relu, N = 500, fresh second batch, grid $G3, $GT"
mv "$PAGE.new" "$PAGE"
