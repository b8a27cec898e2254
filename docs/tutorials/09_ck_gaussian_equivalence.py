"""Lesson 9 — Why the nonlinearity adds "noise" to the conjugate kernel: Gaussian equivalence.

Random features F = σ(X Wᵀ) (X rows N(0, I_d), W rows N(0, I_d/d)) and their kernel K = F Fᵀ/N.
Expand σ in Hermite polynomials: σ = μ0 + μ1 He_1 + (the rest).  The constant μ0 gives one huge
outlier near n·μ0².  The linear part gives μ1 X Wᵀ, a product of two Gaussian matrices.  The rest,
He_2, He_3, ..., evaluated at the nearly orthogonal pre-activations, is as good as independent noise
of variance μ_{>1}² = E σ² − μ0² − μ1²: its entries decorrelate because Cov(He_k(u), He_k(u')) = k! ρᵏ and
ρ = O(d^{-1/2}).  So the bulk of K is that of (μ1 X Wᵀ + μ_{>1} Z)(…)ᵀ/N with Z iid — it depends on σ only
through μ1² and μ_{>1}² (docs/theory/kernel_spectra.md §1.1).

This lesson checks three consequences:
1. two activations with the same (μ1², μ_{>1}²) have the same CK bulk, however different they look;
2. replacing the nonlinear part by Gaussian noise (the "equivalent" linear model) gives the same spectrum;
3. the limit law of rmtfl (a quartic for the Stieltjes transform, docs/theory/kernel_spectra.md §1.2) predicts
   the quantiles, and the μ0 outlier sits at n·μ0² plus the bulk's correction (docs/theory/kernel_spectra.md §2.2).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from _lesson import OUT, row, size  # noqa: E402

import rmtfl.numerics as nm  # noqa: E402
import rmtfl.theory as th  # noqa: E402

d = size(300, 1500)
psi, phi = 1.0, 1.5
N, n = int(psi * d), int(phi * d)
rng = np.random.default_rng(9)

# 1. tanh and a polynomial with the same mu1 and the same nonlinear variance, but mu3 = 0:
#    sigma2 = mu1 He_1 + sqrt(c/2) He_2 (odd vs even nonlinear part!)
mu1 = th.hermite_coeff("tanh", 1)
c = th.nonlinear_norm("tanh") ** 2
twin = f"hermite(0, {mu1}, {np.sqrt(c / 2)})"
print(f"tanh: mu1 = {mu1:.4f}, nonlinear variance = {c:.4f}; twin: {twin}")
law = th.ck_spectrum("tanh", psi=psi, phi=phi)
law_twin = th.ck_spectrum(twin, psi=psi, phi=phi)
levels = np.array([0.4, 0.6, 0.9])  # the atom at 0 holds 1 - psi/phi = 1/3
print("same predicted quantiles:", np.allclose(law.quantile(levels), law_twin.quantile(levels), atol=1e-9))

ev_tanh = nm.simulate_ck("tanh", N=N, d=d, n=n, rng=rng).eigenvalues
ev_twin = nm.simulate_ck(twin, N=N, d=d, n=n, rng=rng).eigenvalues
# the twin's He_2 has mu2 != 0: two small "norm" spikes (docs/theory/kernel_spectra.md §2.1) -- drop them
spikes = th.ck_spectrum(twin, psi=psi, phi=phi, N=N).outliers
k = sum(o.multiplicity for o in spikes if o.exists)
for p in levels:
    row(f"tanh quantile {p:.1f}", law.quantile(p), np.quantile(ev_tanh, p, method="inverted_cdf"))
    row(f"twin quantile {p:.1f}", law_twin.quantile(p), np.quantile(ev_twin[k:], p, method="inverted_cdf"))

# 2. the equivalent linear model: mu1 X W^T + sqrt(c) Z
X = rng.standard_normal((n, d))
W = rng.standard_normal((N, d)) / np.sqrt(d)
F_lin = mu1 * X @ W.T + np.sqrt(c) * rng.standard_normal((n, N))
ev_lin = np.linalg.eigvalsh(F_lin @ F_lin.T / N)[::-1]
row("equivalent linear model: KS to the law", 0.0, nm.ks_distance_ck(ev_lin, law))
row("tanh features:           KS to the law", 0.0, nm.ks_distance_ck(ev_tanh, law))

# 3. relu: the mu0 outlier, and where the bulk puts it
relu = th.ck_spectrum("relu", psi=psi, phi=phi, N=N)
ev_relu = nm.simulate_ck("relu", N=N, d=d, n=n, rng=rng).eigenvalues
print(f"n mu0^2 = {n * relu.mu0 ** 2:.3f} (the naive guess)")
row("relu mu0 outlier", relu.outliers[0].location, ev_relu[0])
row("relu top bulk eigenvalue", relu.top_bulk, ev_relu[1])

fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.4))
x = np.linspace(1e-4, 1.2 * law.edges.upper, 400)
axes[0].hist(ev_tanh, bins=60, density=True, alpha=0.4, label="tanh")
axes[0].hist(ev_twin[k:], bins=60, density=True, alpha=0.4, label="twin (same μ1², μ>1²)")
axes[0].hist(ev_lin, bins=60, density=True, histtype="step", color="k", label="μ1 XWᵀ + μ>1 Z")
axes[0].plot(x, law.density(x), "r", label="predicted")
axes[0].set(xlabel="eigenvalue of K", ylabel="density", ylim=(0, 2.5))
axes[0].legend(fontsize=7)
nm_plot = __import__("rmtfl.plots", fromlist=["plot_ck_spectrum"])
nm_plot.plot_ck_spectrum(ev_relu, relu, outliers=[relu.outliers[0].location], ax=axes[1])
axes[1].set_title("relu: the μ0 outlier is far out", fontsize=9)
fig.savefig(OUT / "09_ck_gaussian_equivalence.png", dpi=100, bbox_inches="tight")
