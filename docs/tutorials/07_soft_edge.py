"""Lesson 7 — The soft edge: Tracy–Widom fluctuations, level spacing N^{-2/3}, and top-k solvers.

Lesson 1 put the largest eigenvalue of W Wᵀ at the Marchenko–Pastur edge
(1 + √ψ)².  At finite N it fluctuates around the edge, but only on the scale
N^{-2/3}, far below the N^{-1/2} of an average of N numbers.  For real Gaussian
W (N x d, entries N(0, 1/d)) Johnstone (2001) showed that the top singular value
is s₁ ≈ c_N + σ_N · TW₁, with TW₁ the Tracy–Widom law of the GOE (β = 1), a
centre c_N -> 1 + √ψ and a scale σ_N ≈ ½ √ψ (1 + √ψ)^{1/3} N^{-2/3}
(th.largest_sv_scaling, which maps Johnstone's eigenvalue centring to singular values).

Where does N^{-2/3} come from?  The MP density vanishes like a square root at the
edge, ρ(λ) ≈ C √(λ₊ − λ), so the k-th eigenvalue from the top sits where
N ∫ ρ ≈ k, at distance ~ (k/N)^{2/3} below the edge.  The top eigenvalues are
therefore spaced ~ N^{-2/3} apart, the same scale as their fluctuations.

That spacing is what makes the top of a spectrum expensive for Krylov solvers.
After K steps Lanczos has found λ₁ with an error shrinking like
1/T_K(1 + 2γ) ≈ exp(−K arccosh(1 + 2γ)) (Kaniel–Paige), with γ = (λ₁ − λ₂)/(λ₂ − λ_min)
the relative gap.  An outlier above the BBP threshold (lesson 2) has γ of order one,
so a few dozen steps suffice at any N.  A bulk value at the soft edge has
γ ~ N^{-2/3}, arccosh(1 + 2γ) ≈ 2√γ, and so needs roughly N^{1/3} times more steps.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from _lesson import OUT, row, size  # noqa: E402

import rmtfl.numerics as nm  # noqa: E402
import rmtfl.theory as th  # noqa: E402
from rmtfl.numerics import lanczos_triplets  # noqa: E402
from rmtfl.theory._classical.tracy_widom import TW_STD  # noqa: E402

psi = 0.5
rng = np.random.default_rng(7)

# --- 1. Edge fluctuations.  Sample many pure-noise matrices at a few sizes and
# standardise the top singular value with Johnstone's centre and scale: the
# result should follow TW₁, whose mean and standard deviation need no simulation.
tw_sizes = size((40, 80), (50, 100, 200))
n_samples = size(150, 400)
tw_mean = th.tracy_widom_mean(beta=1)     # quadrature of the Fredholm determinant, ≈ -1.2065
print(f"TW₁: mean {tw_mean:.4f}, std {TW_STD[1]:.4f};  {n_samples} matrices per size, ψ = {psi}")
standardised, sv_std, gaps = {}, [], []
for N, child in zip(tw_sizes, rng.spawn(len(tw_sizes))):
    d = int(N / psi)
    center, scale = th.largest_sv_scaling(N, d, beta=1)
    top = np.array([nm.eigenvalues_of_gram(nm.gaussian_matrix(N, d, rng=c))[:2]
                    for c in child.spawn(n_samples)])           # λ₁ ≥ λ₂ of W Wᵀ, per sample
    s1 = np.sqrt(top[:, 0])
    standardised[N] = (s1 - center) / scale
    sv_std.append((scale * TW_STD[1], s1.std(ddof=1)))
    gaps.append(np.mean(top[:, 0] - top[:, 1]))
    row(f"N={N}: mean of (s₁ - c_N)/σ_N", tw_mean, standardised[N].mean())
    row(f"N={N}: std of s₁, times N^(2/3)", scale * TW_STD[1] * N ** (2 / 3), s1.std(ddof=1) * N ** (2 / 3))
print(f"(stderr of each mean ≈ {TW_STD[1] / np.sqrt(n_samples):.3f}; σ_N·N^(2/3) = "
      f"{th.largest_sv_scaling(tw_sizes[-1], int(tw_sizes[-1] / psi)).scale * tw_sizes[-1] ** (2 / 3):.4f})")

# --- 2. Level spacing at the edge.  The gap between the two largest eigenvalues of
# W Wᵀ shrinks like the fluctuations: N^(2/3) times it stays roughly constant.
for N, gap in zip(tw_sizes, gaps):
    print(f"N={N}: mean gap λ₁ - λ₂ = {gap:.4f},  times N^(2/3) = {gap * N ** (2 / 3):.3f}")

# --- 3. What the spacing costs a top-k solver.  A spiked matrix with one clear
# outlier (θ well above the BBP threshold).  Lanczos on the Gram side counts its
# products with MᵀM in `.steps`; every returned value is converged to a residual
# of 1e-10 · s₁, and with `edge` the next Ritz value must be certainly below it.
# (Beyond 100 steps it checks convergence only every 5th step, so large counts are rounded up to 5.)
theta = 1.5
print(f"\nθ = {theta} (threshold ψ^(1/4) = {th.bgn_threshold(psi):.3f}); "
      f"outlier at s = {th.bgn_outlier(theta, psi).singular_value:.4f}, bulk edge 1+√ψ = {1 + psi**0.5:.4f}")
lz_sizes = size((100, 200), (200, 400, 800, 1600))
n_seeds = 2
lam1 = th.bgn_outlier(theta, psi).singular_value ** 2
lo, hi = th.mp_edges(psi)
gamma = (lam1 - hi) / (hi - lo)           # relative gap of the outlier, N-independent
tol = 1e-10                               # lanczos_triplets' default residual tolerance
steps = {}
for N, child in zip(lz_sizes, rng.spawn(len(lz_sizes))):
    d = int(N / psi)
    edge = th.edge_margin(N, d)           # bulk edge + 99% Tracy–Widom margin
    one, six = [], []
    for c in child.spawn(n_seeds):
        W = nm.spiked_matrix(N, d, theta, rng=c).W
        r1 = lanczos_triplets(W, 1, edge=edge, rng=c)                    # the outlier, certified
        r6 = lanczos_triplets(W, 6, edge=edge, rng=c, maxiter=N)        # + 5 bulk-edge values
        assert r1.certified and r6 is not None
        one.append(r1.steps)
        six.append(r6.steps)
    steps[N] = (np.mean(one), np.mean(six))
    # Kaniel–Paige estimate: a random start has tan φ₀ ≈ √N; stop when sin φ ≈ tol·λ₁/(λ₁ − λ₊).
    estimate = 1 + np.log(2 * np.sqrt(N) * (lam1 - hi) / (tol * lam1)) / np.arccosh(1 + 2 * gamma)
    row(f"N={N}: Lanczos steps, outlier (k=1)", estimate, steps[N][0])
    print(f"{'':<10}Lanczos steps, outlier + 5 bulk-edge values (k=6): {steps[N][1]:.1f}")
# The outlier needs roughly the same few dozen steps at every N (only the log of the
# start overlap grows); the bulk-edge values need more and more, roughly like N^(1/3).
N0, N1 = lz_sizes[0], lz_sizes[-1]
row(f"k=6 steps ratio N={N1} / N={N0}, ~ (N1/N0)^(1/3)", (N1 / N0) ** (1 / 3), steps[N1][1] / steps[N0][1])

# --- 4. The library's answer.  nm.top_singular_triplets(method="mixed") solves the
# smaller Gram side densely in float32 (blind to clustering) and refines in float64;
# "iterative" is the Lanczos above.  Both agree with a dense float64 SVD.  Because a
# top-k request usually includes bulk-edge values, "auto" picks the dense mixed solver
# up to min(N, d) = MIXED_MAX (rmtfl/numerics/topk.py) and Lanczos above it.
N = size(200, 800)
d = int(N / psi)
W = nm.spiked_matrix(N, d, theta, rng=rng.spawn(1)[0]).W
edge = th.edge_margin(N, d)
s_dense = np.linalg.svd(W, compute_uv=False)[:6]
for method in ("mixed", "iterative"):
    top = nm.top_singular_triplets(W, 6, edge=edge, method=method, rng=3)
    rel = np.max(np.abs(top.s - s_dense) / s_dense)
    print(f"N={N}, method={method!r}: solver {top.method!r}, {top.n_above} value above the edge "
          f"(complete={top.complete}), max relative difference to dense SVD {rel:.1e}")

# --- 5. Picture: the TW₁ law, the N^(-2/3) scale, and the Lanczos step counts.
fig, axes = plt.subplots(1, 3, figsize=(14, 3.6))
fig.subplots_adjust(wspace=0.35)
Nb = tw_sizes[-1]
grid = np.linspace(-5.0, 4.0, size(30, 90))
axes[0].hist(standardised[Nb], bins=25, density=True, alpha=0.5, label=f"(s₁ - c_N)/σ_N, N={Nb}")
axes[0].plot(grid, th.tracy_widom_pdf(grid, beta=1), "k", label="Tracy–Widom β=1")
axes[0].axvline(tw_mean, color="grey", lw=0.8, label="TW₁ mean")
axes[0].set(xlabel="standardised top singular value", ylabel="density", title="edge fluctuations")
n_arr = np.array(tw_sizes, dtype=float)
sv_std = np.array(sv_std)
axes[1].loglog(n_arr, sv_std[:, 0], "k-", label="σ_N · std(TW₁)")
axes[1].loglog(n_arr, sv_std[:, 1], "o", label="measured std of s₁")
axes[1].loglog(n_arr, gaps, "s", label="measured mean λ₁ - λ₂")
axes[1].loglog(n_arr, gaps[0] * (n_arr / n_arr[0]) ** (-2 / 3), "k:", label="∝ N^(-2/3)")
axes[1].set(xlabel="N  (d = N/ψ)", ylabel="size", title="the edge scale N^(-2/3)")
nl = np.array(lz_sizes, dtype=float)
st = np.array([steps[N] for N in lz_sizes])
axes[2].plot(nl, st[:, 0], "o-", label="k=1: the outlier")
axes[2].plot(nl, st[:, 1], "s-", label="k=6: outlier + 5 bulk-edge values")
axes[2].plot(nl, st[0, 1] * (nl / nl[0]) ** (1 / 3), "k:", label="∝ N^(1/3)")
axes[2].set_xscale("log")
axes[2].set(xlabel="N  (d = N/ψ)", ylabel="Lanczos steps (products with MᵀM)", ylim=(0, None),
            title=f"Lanczos cost, θ={theta}")
for ax, ns in ((axes[1], tw_sizes), (axes[2], lz_sizes)):
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.xaxis.set_minor_locator(plt.NullLocator())
for ax in axes:
    ax.legend(fontsize=7)
fig.savefig(OUT / "07_soft_edge.png", dpi=100, bbox_inches="tight")

# Exercise: lower θ towards the threshold ψ^(1/4).  How does the outlier's step count
# grow as its relative gap γ shrinks, and when does the 99% edge margin stop
# certifying it?
