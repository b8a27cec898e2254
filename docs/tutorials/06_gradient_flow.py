"""Lesson 6 — Gradient flow from small initialisation.

Train a positively L-homogeneous network H(x; w) (here a two-layer net with
σ(z) = z², so L = 3) by gradient flow on the summed square loss, starting at
δ·w0 with δ small.  Near the origin the loss is L(0) − N(w) + O(|w|^{2L}) with
the neural correlation function N(u) = Σ_i y_i H(x_i; u): the flow is a
gradient *ascent* of N, so the direction of w aligns with a KKT point u* of
N on the unit sphere, and the norm blows up after a time T*(w0)/δ^{L−2}
(docs/theory/gradient_flow.md §7).  Then w leaves the origin along u*, following a
δ-independent path to the first saddle, and the neurons that were zero in u*
stay O(δ) on the way (sparsity is preserved).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from _lesson import OUT, row, size  # noqa: E402

import rmtfl.numerics as nm  # noqa: E402
import rmtfl.theory as th  # noqa: E402

# The data of docs/theory/gradient_flow.md §14, Check 2: X = I_3, y = (1, -0.5, -0.3), N = 4 hidden units.
X = np.eye(3)
y = np.array([1.0, -0.5, -0.3])
spec = dict(activation="square", N=4)
print("homogeneity degree L =", th.homogeneity_degree(th.TwoLayer(3, 4, "square")))

# --- 1. The KKT point of the NCF: one active neuron (closed form beside the search).
kkt = th.ncf_kkt(X, y, **spec)
print(f"N(u*) = {kkt.value:.7f} (closed form 2/(3√3)·max|y| = {2 / (3 * np.sqrt(3)):.7f}), "
      f"margin Δ = {kkt.margin:.4f}")

# --- 2. Escape: δ·t_esc -> T*(w0) as δ -> 0.
a0 = np.array([0.5, -0.4, 0.3, 0.2])
W0 = np.array([[0.3, 0.4, -0.2], [0.5, -0.1, 0.3], [-0.2, 0.3, 0.4], [0.1, -0.3, -0.5]])
w0 = np.concatenate([a0, W0.ravel()])            # packing: a first, then W row-major
w0 /= np.linalg.norm(w0)
fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
for delta in size([1e-2, 1e-3], [1e-2, 1e-3, 1e-4]):
    pred = th.escape_time(X, y, **spec, delta=delta, w0=w0)
    run = nm.simulate_flow(X, y, **spec, delta=delta, w0=w0, t_end=3 * pred.time, escape_loss=0.42)
    row(f"δ={delta:g}: δ·t_esc vs T*(w0)", pred.blowup_time, delta * run.t_escape)
    plateau_loss = run.loss[np.argmin(np.abs(delta * run.t - 4.0))]   # δ·t = 4 lies on the first plateau
    axes[0].plot(delta * run.t, run.loss, label=f"δ={delta:g}")
    axes[1].semilogy(delta * run.t, run.unit_norms, lw=0.8)
axes[0].axvline(pred.blowup_time, color="k", ls="--", lw=0.8, label="T*(w0)")
axes[0].set(xlabel="δ·t", ylabel="loss", xscale="log")
axes[1].set(xlabel="δ·t", ylabel="per-neuron norm ν_j", xscale="log")
axes[0].legend(fontsize=7)

# --- 3. The first saddle = lim p(t): one neuron with a w1² = 1, w1² = 2a², loss 0.17.
saddle = th.first_saddle(X, y, **spec)
row("first-saddle loss (theory) vs plateau loss", saddle.loss, plateau_loss)
fig.savefig(OUT / "06_gradient_flow.png", dpi=100, bbox_inches="tight")

# Exercise: replace "square" by "identity" (L = 2).  The escape time then grows
# like ln(1/δ)/(2N*) instead of 1/δ.
