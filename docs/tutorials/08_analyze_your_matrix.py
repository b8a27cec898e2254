"""Lesson 8 — Analyse your own matrix: train, save W, read it back, and compare with the one-step theory.

The earlier lessons compared rmtfl's simulations with its theory, with every parameter known.  A
researcher with a trained network knows none of them: not the noise level of the weights, not which
singular values are real outliers, not the strength of the signal behind them.  `rmtfl.analyze` answers
these from the matrix alone (docs/analyze.md):

* the noise level `var`, from quantiles of the bulk (spikes do not bias it);
* the outliers, each tested against the Tracy–Widom law of the largest pure-noise value, one after the
  other (a sequential test at level alpha per step);
* for each outlier the BGN strength θ̂ (model W = √var (G + θ u vᵀ), G iid N(0, 1/d)), an interval for it,
  and the predicted squared overlaps of its singular vectors with the planted directions;
* whether the bulk is Marchenko–Pastur at all.

Here the "user's matrix" is a first layer after one large gradient step (lesson 3), trained with rmtfl's
own step, saved to a .npy file and analysed from the file, exactly as `rmtfl analyze W1.npy` would.  The
one-step theory (th.one_step) predicts the spike: W1 = W0 + θ₁ u vᵀ + (small), with θ₁ = |η μ₁| ‖a‖ ‖β̂‖,
u = a/‖a‖ and v = β̂/‖β̂‖ (docs/theory/two_step.md §3).  W0 has entries N(0, 1/d), so var = 1 and θ in the
analysis is θ₁ itself.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from _lesson import OUT, row, size  # noqa: E402

import rmtfl  # noqa: E402
import rmtfl.numerics as nm  # noqa: E402
import rmtfl.theory as th  # noqa: E402

activation, target = "tanh", "linear"
d = size(200, 1000)
psi, phi, eta = 1.0, 2.0, 3.0
N, n = int(psi * d), int(phi * d)
rng = np.random.default_rng(8)

# --- 1. Train: one large gradient step of the correlation loss (docs/conventions.md §5), a fixed.
r0, r1, r2, r3 = rng.spawn(4)
W0 = nm.init_first_layer(N, d, rng=r0)
a = nm.init_second_layer(N, rng=r1)
X = nm.sample_inputs(n, d, rng=r2)
y = nm.sample_targets(X, target=target, rng=r3)
W1 = nm.gd_steps(activation, W0, a, (X, y), etas=[eta])

# --- 2. Save it, as a user would, and analyse the file.
path = OUT / "W1.npy"
np.save(path, W1)
W = rmtfl.compare.load_matrices(path)["W1"]
rep = rmtfl.analyze(W)
print(rep.table_row())
print("  ", rep.reason)

# --- 3. The prediction: one_step gives θ₁, the outlier's location and the alignment of v with β*.
pred = th.one_step(activation, target, psi=psi, phi=phi, eta=eta)
beta_hat = X.T @ y / n
theta_sample = abs(eta * th.hermite_coeff(activation, 1)) * np.linalg.norm(a) * np.linalg.norm(beta_hat)
row("noise level var", 1.0, rep.var)
row("bulk edge 1 + √ψ", pred.bulk_edge, rep.bulk_edge)
if rep.outliers:
    o = rep.outliers[0]
    row("outlier singular value", pred.singular_value, o.singular_value)
    row("θ (theory: θ₁ of one_step)", pred.theta, o.theta)
    row("θ (this sample: |η μ₁| ‖a‖ ‖β̂‖)", theta_sample, o.theta)
    print(f"   θ̂ interval at {rep.ci_level:.0%}: [{o.theta_low:.3f}, {o.theta_high:.3f}];  "
          f"p-value {o.p_value:.2g};  threshold θ_c = ψ^(1/4) = {psi ** 0.25:.3f}")
    # the predicted overlap of the right singular vector with the planted direction v = β̂/‖β̂‖
    _, _, Vt = np.linalg.svd(W, full_matrices=False)
    v = beta_hat / np.linalg.norm(beta_hat)
    row("cos²(right singular vector, β̂)", o.cos2_right, float(Vt[0] @ v) ** 2)
    u = a / np.linalg.norm(a)
    U1 = W @ Vt[0] / np.linalg.norm(W @ Vt[0])
    row("cos²(left singular vector, a)", o.cos2_left, float(U1 @ u) ** 2)
print(f"{len(rep.outliers)} outlier(s) found; one_step predicts {int(pred.is_outlier)} (θ₁ = {pred.theta:.3f} "
      f"{'>' if pred.is_outlier else '<='} threshold {pred.threshold:.3f})")

# --- 4. The figure: ESD, fitted MP, the edge and its Tracy–Widom margin, the outlier with θ̂.
fig, ax = plt.subplots(figsize=(5.6, 3.8))
rep.plot(ax=ax)
ax.set_title(f"W₁ after one step (η = {eta:g}, N = d = {d}): " + ax.get_title(), fontsize=8)
fig.savefig(OUT / "08_analyze_your_matrix.png", dpi=110, bbox_inches="tight")
print(f"figure: {OUT / '08_analyze_your_matrix.png'}")
