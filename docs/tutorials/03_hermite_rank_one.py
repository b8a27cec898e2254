"""Lesson 3 — Hermite expansions, and why the first gradient step is rank one.

Expand the activation in probabilists' Hermite polynomials,
σ = Σ_k μ_k/k! He_k with μ_k = E[σ(z) He_k(z)] (docs/conventions.md §2).  The
correlation-loss gradient at initialisation is

    G = (1/n) diag(a) σ'(W0 Xᵀ) diag(y) X .

Replace σ'(W0 Xᵀ) by its mean E σ'(z) = μ_1 (Stein's identity) and what is left,
μ_1 a β̂ᵀ with β̂ = Xᵀy/n, has rank one; the fluctuation around the mean is
small in operator norm (BES+22).  So one step adds a single spike to the MP
bulk of W0, whose strength θ_1 = |η μ_1| ‖a‖ ‖β̂‖ decides (BBP) whether it
separates, and which can only see the *linear* part μ_1* of the target.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from _lesson import OUT, row, size  # noqa: E402

import rmtfl.numerics as nm  # noqa: E402
import rmtfl.theory as th  # noqa: E402

# --- 1. Hermite coefficients: exact where a closed form exists, quadrature otherwise.
for name in ("relu", "tanh", "erf"):
    mu = th.hermite_coeffs(name, 4)
    print(f"{name:>5}: μ_0..μ_4 =", np.array2string(mu, precision=5, suppress_small=True))
print("relu: BES+22's 'μ_2' is the non-linear norm μ_>1 =", round(th.nonlinear_norm("relu"), 10),
      "(not μ_2 =", round(th.hermite_coeff("relu", 2), 10), ")")

# --- 2. The gradient is rank one plus a small remainder.
d = size(300, 1500)
N, n = d, 2 * d
rng = np.random.default_rng(3)
r1, r2, r3, r4 = rng.spawn(4)
W0 = nm.init_first_layer(N, d, rng=r1)
a = nm.init_second_layer(N, rng=r2)
X = nm.sample_inputs(n, d, rng=r3)
target = th.make_target("tanh")
y = nm.sample_targets(X, target=target, rng=r4)
G = nm.correlation_grad("tanh", W0, a, X, y)
mu1 = th.hermite_coeffs("tanh", 1)[1]
beta_hat = X.T @ y / n
rank_one = mu1 * np.outer(a, beta_hat)
sv_G = nm.singular_values(G)
print(f"singular values of G: {sv_G[:4].round(4)} ...  (one dominant value)")
print(f"‖G - μ1 a β̂ᵀ‖ / ‖G‖ = {nm.singular_values(G - rank_one)[0] / sv_G[0]:.3f}")

# --- 3. One step of size η: prediction beside measurement.
eta = 3.0
pred = th.one_step("tanh", target, psi=N / d, phi=n / d, eta=eta)
W1 = W0 + eta * G
top = nm.top_singular_triplets(W1, 1, rng=r1)
row("top singular value of W1", pred.singular_value, top.s[0])
row("cos²(v̂1, β*)", pred.cos2_target, nm.squared_overlaps(top.V, np.eye(d)[:, :1])[0, 0])
row("cos²(û1, a)", pred.cos2_second_layer, nm.squared_overlaps(top.U, a[:, None])[0, 0])

fig, ax = plt.subplots(figsize=(5, 3.2))
sv = nm.singular_values(W1)
ax.hist(sv, bins=60, density=True, alpha=0.5, label="singular values of W1")
ax.axvline(pred.singular_value, color="r", label="predicted outlier")
ax.axvline(pred.bulk_edge, color="k", ls="--", label="bulk edge 1+√ψ")
ax.set_xlabel("s")
ax.legend(fontsize=8)
fig.savefig(OUT / "03_rank_one.png", dpi=100, bbox_inches="tight")

# Exercise: use target "he2" (information exponent 2).  The outlier still appears
# (E y² > 0 feeds ‖β̂‖) but cos²(v̂1, β*) -> 0: one step cannot learn it.
