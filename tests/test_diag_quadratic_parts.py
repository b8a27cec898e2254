"""benchmarks/diag_quadratic_parts.py: the quadratic sigma's single samples in H and in W_2
(docs/theory/two_step_attempts.md §23)."""
from __future__ import annotations

import math

import numpy as np

from benchmarks.diag_quadratic_parts import QUADRATIC, paired_draw, predicted_samples
from rmtfl.theory import get_activation, make_target


def test_paired_draw_is_two_gradient_steps_and_its_bulk():
    """``W_2 = H + P`` built by the script is the network's two reused-batch steps on the same draw, and ``H`` is
    ``W_2`` less a rank-two part (docs/theory/two_step.md §5.4)."""
    from rmtfl.numerics import gd_steps, sample_targets

    N = d = 60
    n, eta1, eta2, seed = 120, 3.0, 4.0, 7
    tgt = make_target(QUADRATIC)
    w2, h, ymax = paired_draw(tgt, N=N, d=d, n=n, eta1=eta1, eta2=eta2, seed=seed, k=6)
    rng = np.random.default_rng(seed)
    W0 = rng.standard_normal((N, d)) / math.sqrt(d)
    a = rng.standard_normal(N) / math.sqrt(N)
    X = rng.standard_normal((n, d))
    y = np.asarray(sample_targets(X, target=tgt), dtype=float)
    W2 = gd_steps(get_activation(QUADRATIC), W0, a, (X, y), etas=[eta1, eta2])
    np.testing.assert_allclose(w2, np.linalg.svd(W2, compute_uv=False)[:6], rtol=1e-9)
    assert ymax == float(y.max())
    # Weyl for a rank-two difference: the k-th value of H is at least the (k+2)-th of W_2
    s = np.linalg.svd(W2, compute_uv=False)
    assert np.all(h[:4] >= s[2:6] - 1e-9)


def test_flags_off_is_the_prediction_and_the_own_term_lifts_the_samples():
    """The form with the pole over the bulk's samples and the own term at ``y_i / phi`` is the prediction's; the own
    term at ``M``'s eigenvalue (larger than ``y_i / phi``) lifts every single-sample rank."""
    from rmtfl.theory import two_step

    act, tgt = get_activation(QUADRATIC), make_target(QUADRATIC)
    N, eta = 1000, 1000 ** 0.4
    kept = predicted_samples(act, tgt, N=N, eta1=eta, eta2=eta, whole=False, own=False)
    own = predicted_samples(act, tgt, N=N, eta1=eta, eta2=eta, whole=False, own=True)
    p = two_step(QUADRATIC, QUADRATIC, psi=1, phi=2, eta1=eta, eta2=eta, N=N, extreme_samples="single")
    counted = [o.singular_value for o in p.outliers if o.kind == "sample"]
    assert counted and np.allclose(counted, [m for m, _ in kept[:len(counted)]], rtol=1e-12)
    assert all(b > a for (a, _), (b, _) in zip(kept, own))


def test_resolvent_shift_deterministic_form_follows_the_exact_change():
    """``P`` in the rest of the matrix takes resolvent weight off the column's rows: the exact change of the column's
    mean self-energy (``G_B - G_0``, two inverses) is negative, the deterministic form (Woodbury's update with the
    part along ``B0 V`` by its row variance) follows it within a factor 2, and its L and V parts add up to it."""
    from benchmarks.diag_quadratic_parts import eigenbasis_draw, resolvent_shift

    H, lam, b, a = eigenbasis_draw(make_target(QUADRATIC), N=150, d=150, n=300, eta1=6.0, eta2=6.0, seed=3)
    top, s, exact, de, d_l, d_v = resolvent_shift(H, lam, b, a, 6.0, 6.0)
    assert s > 0 and top > 0
    assert exact < 0 and de < 0                     # P takes resolvent weight off the column's rows
    assert 0.5 < de / exact < 2.0
    assert math.isclose(d_l + d_v, de, rel_tol=1e-12)


def test_row_kernel_route_pushes_the_single_samples_only():
    """P's update of the row kernel lowers every single-sample root of the joint problem below the coupled one and
    leaves the spikes of P where they were (to 0.1 %); the coupling itself lowers the samples and lifts the spikes."""
    from benchmarks.diag_quadratic_parts import joint_push

    N, eta = 1000, 1000 ** 0.4
    out = joint_push(get_activation(QUADRATIC), make_target(QUADRATIC), N=N, eta1=eta, eta2=eta, whole=True,
                     own=True)
    (sp0, sm0), (sp1, sm1), (sp2, sm2) = out["uncoupled"], out["coupled"], out["coupled + row kernel"]
    assert len(sp1) == len(sp2) == 2 and len(sm2) == 3
    assert all(b < a for a, b in zip(sm0, sm1)) and all(b < a for a, b in zip(sm1, sm2))
    assert sp1[1] > sp0[1]
    np.testing.assert_allclose(sp2, sp1, rtol=1e-3)
