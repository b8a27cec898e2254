"""Lesson 2 — Spikes and the BBP transition.

Add a rank-one signal θ u vᵀ (unit u ∈ R^N, v ∈ R^d) to the noise W0.  Below the
threshold θ_c = ψ^{1/4} the signal is swallowed by the bulk: the top singular
value sticks to the edge 1 + √ψ and the top singular vectors know nothing of
u, v.  Above it, one singular value separates from the bulk at
s(θ) = √((1+θ²)(ψ+θ²))/θ, and the singular vectors align with u and v with the
squared overlaps ω_N(θ), ω_d(θ) of Benaych-Georges & Nadakuditi (docs/theory/two_step.md §2).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from _lesson import OUT, row, size  # noqa: E402

import rmtfl.numerics as nm  # noqa: E402
import rmtfl.theory as th  # noqa: E402

d = size(400, 2000)
psi = 0.5
N = int(psi * d)
print(f"threshold θ_c = ψ^(1/4) = {th.bgn_threshold(psi):.4f}, bulk edge 1+√ψ = {1 + psi**0.5:.4f}")

thetas = np.linspace(0.3, 2.5, size(6, 12))
rng = np.random.default_rng(2)
measured = []
for theta, child in zip(thetas, rng.spawn(len(thetas))):
    sp = nm.spiked_matrix(N, d, theta, rng=child)          # W0 + θ u vᵀ
    top = nm.top_singular_triplets(sp.W, 1, rng=child)     # top-k solver (rmtfl.numerics._classical.topk)
    cos2_u = nm.squared_overlaps(top.U, sp.U)[0, 0]
    cos2_v = nm.squared_overlaps(top.V, sp.V)[0, 0]
    measured.append((top.s[0], cos2_u, cos2_v))
    pred = th.bgn_outlier(theta, psi)
    row(f"θ={theta:.2f}: top singular value", pred.singular_value, top.s[0])
    row(f"θ={theta:.2f}: cos²(û, u)", pred.cos2_left, cos2_u)

measured = np.array(measured)
grid = np.linspace(0.3, 2.5, 200)
pred = th.bgn_outlier(grid, psi)
fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
axes[0].plot(grid, pred.singular_value, "k", label="BGN prediction")
axes[0].plot(thetas, measured[:, 0], "o", label=f"simulation, N={N}")
axes[0].set(xlabel="θ", ylabel="top singular value")
axes[1].plot(grid, pred.cos2_left, "k", label="ω_N (left)")
axes[1].plot(grid, pred.cos2_right, "k--", label="ω_d (right)")
axes[1].plot(thetas, measured[:, 1], "o", label="cos²(û,u)")
axes[1].plot(thetas, measured[:, 2], "s", label="cos²(v̂,v)")
axes[1].set(xlabel="θ", ylabel="squared overlap")
for ax in axes:
    ax.axvline(th.bgn_threshold(psi), color="grey", lw=0.8)
    ax.legend(fontsize=7)
fig.savefig(OUT / "02_bbp.png", dpi=100, bbox_inches="tight")

# Near θ_c the convergence is slow: the edge fluctuates on the scale N^(-2/3)
# (Tracy–Widom), th.largest_sv_scaling(N, d) gives that scale.
