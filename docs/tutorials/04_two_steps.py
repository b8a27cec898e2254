"""Lesson 4 — Two steps and the (α1, α2) phase diagram.

After the first step W1 = W0 + η1 G(W0) has one spike along (a, β̂).  The second
step is taken at W1, where σ'(W1 x) = σ'(W0 x + Δ) now depends on the first
update Δ.  Taylor-expanding in Δ (docs/theory/two_step.md §5) gives terms
a^{⊙(k+1)} v_kᵀ of operator norm ≍ N^{α2 − k(½ − α1)} with η_t ≍ N^{α_t}.
Term k rises above the Marchenko–Pastur bulk iff k(½ − α1) < α2, so

    Λ(α1, α2) = min(L − 1, ⌊α2 / (½ − α1)⌋)

extra outliers appear (L the polynomial degree of σ).  We check one exactly
solvable case, σ = He1 + He2/2 (L = 2, at most one extra outlier), draw
the theoretical phase diagram, and set it beside the same prediction at a finite N.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from _lesson import OUT, row, size  # noqa: E402

import rmtfl.numerics as nm  # noqa: E402
import rmtfl.theory as th  # noqa: E402

# --- 1. Counting outliers: exact rational arithmetic, critical lines flagged.
for a1, a2, L in [(0.2, 0.25, 3), (0.25, 0.3, 3), (0.3, 0.45, 3), (0.3, 0.45, 2)]:
    r = th.outlier_count(a1, a2, degree=L)
    print(f"Λ(α1={a1}, α2={a2}; L={L}) = {int(r.count)}")

# --- 2. The exactly solvable quadratic activation with target z + He2/√2.
sigma, target = "hermite(0, 1, 0.5)", "hermite(0, 1, 0.7071067811865476)"
d = size(400, 1500)
N, n = d, 4 * d
# Fixed step sizes at finite N.  With η ≍ N^α the second spike scales like N^{α2 − (½ − α1)}:
# this choice keeps it a few units above the bulk edge 1 + √ψ = 2 at every N.
eta1 = eta2 = 8.0 * (N / 1500) ** 0.25
pred = th.two_step(sigma, target, psi=N / d, phi=n / d, eta1=eta1, eta2=eta2, batch="reused", N=N)
# One draw's top outlier fluctuates by ~4 % at this size (it rides on |β̂|), so average a few.
seeds = np.random.default_rng(4).spawn(size(1, 4))
tops = np.array([nm.simulate_two_step(sigma, target, N=N, d=d, n=n, eta1=eta1, eta2=eta2, batch="reused", k=10,
                                      n_vectors=1, rng=g).singular_values[:6]
                 for g in seeds])
print(f"prediction mode: {pred.mode}; {len(pred.outliers)} predicted outliers; {len(seeds)} simulated draws")
# With N given, two_step takes the finite-N route (docs/theory/two_step.md §8.2): the bulk widened by the
# remainder R = η diag(a) W0 M, of order η N^-1/2 (docs/theory/two_step.md §5.4), and, after the two spikes
# of P, the outliers made by the batch's most extreme samples (kind "sample", docs/theory/two_step.md §8.3),
# whose number varies from draw to draw.
for i, out in enumerate(pred.outliers[:6]):
    row(f"outlier {i + 1} ({out.kind}): singular value", out.singular_value, tops[:, i].mean())
if len(seeds) > 1:
    print("  standard errors:", np.round(tops.std(axis=0, ddof=1) / np.sqrt(len(seeds)), 3))

# --- 3. The phase diagram (theory).  Reused batches can learn an odd target with
# information exponent 3 (He3) only where Λ >= 2, i.e. 2α1 + α2 > 1.
grid = np.linspace(0.0, 0.49, size(25, 50))
pd = th.phase_diagram(grid, grid, activation="generic", target="he3n", batch="reused")   # generic smooth sigma
fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
im = axes[0].pcolormesh(grid, grid, np.minimum(pd.Lambda, 6), shading="nearest", cmap="viridis")
fig.colorbar(im, ax=axes[0], label="Λ (capped at 6)")
axes[0].set(xlabel="α1", ylabel="α2", title="number of extra outliers")
axes[1].pcolormesh(grid, grid, pd.learnable.astype(float), shading="nearest", cmap="Greys")
axes[1].set(xlabel="α1", title="He3 direction learnable (reused)")
for k in (1, 2, 3):
    axes[1].plot(grid, np.clip(k / 2 - k * grid, 0, 0.49), lw=0.8, label=f"kα1+α2=k/2, k={k}")
axes[1].legend(fontsize=7)
fig.savefig(OUT / "04_phase_diagram.png", dpi=100, bbox_inches="tight")

# --- 4. Exponents against a finite N.  Λ is a statement about N -> ∞; at N = 800 the
# factor N^0.05 between neighbouring grid points is only 1.4, and the prefactors decide.
# The same two_step prediction at a fixed N (BGN on the spikes at that N, MP bulk) counts
# the outliers one would see: the second spike clears the BBP threshold around
# α1 + α2 ≈ 0.25 already, long before its asymptotic boundary α1 + α2 = ½.
N_fin = 800
coarse = np.round(np.arange(0.0, 0.45, 0.05), 2)
at_N = np.array([[len(th.two_step(sigma, target, psi=1.0, phi=2.0, eta1=th.step_size(1.0, N=N_fin, alpha=a1),
                                  eta2=th.step_size(1.0, N=N_fin, alpha=a2), N=N_fin).outliers)
                  for a1 in coarse] for a2 in coarse])
asym = 1 + th.phase_diagram(coarse, coarse, activation=sigma, target=target).effective
first = [float(coarse[np.argmax(at_N[:, j] > 1)] + a1) if (at_N[:, j] > 1).any() else np.nan
         for j, a1 in enumerate(coarse)]
print(f"N={N_fin}: points with a second outlier: {int((at_N > 1).sum())} of {at_N.size} "
      f"(asymptotically: {int((asym > 1).sum())}); first α1+α2 with one, per α1 column: {np.nanmin(first):.2f}")
fig2, ax2 = plt.subplots(1, 2, figsize=(8, 3.2), sharey=True)
for a, m, title in ((ax2[0], asym, "1 + Λ (N → ∞)"), (ax2[1], at_N, f"predicted outliers at N={N_fin}")):
    im2 = a.pcolormesh(coarse, coarse, m, shading="nearest", cmap="viridis", vmin=1, vmax=2)
    a.plot(coarse, 0.5 - coarse, "w--", lw=0.8, label="α1 + α2 = ½")
    a.set(xlabel="α1", title=title, ylim=(-0.025, 0.425))
ax2[0].set(ylabel="α2")
ax2[0].legend(fontsize=7, loc="lower left")
fig2.colorbar(im2, ax=ax2, ticks=[1, 2], label="outliers of W2")
fig2.savefig(OUT / "04_finite_N.png", dpi=100, bbox_inches="tight")

# Exercise: redo step 2 with batch="fresh" (pass n2).  The He2 part of the target
# is no longer seen by the second spike: fresh batches give m_k = 0 for every k
# whenever μ1* = 0 (docs/theory/two_step.md §7.1).
