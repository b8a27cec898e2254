"""Single-sample columns coupled to the spikes of P on the law of their locations (docs/theory/two_step.md §8.3,
"Single samples pushed by the spikes of P"; measured, not kept: ``sample_coupling.COUPLE_SAMPLES`` is off).

Reference values: the shift of a column's strength is the Schur complement of the joint problem with that one
column, ``B^T A^{-1} B`` (:class:`JointProblem`, itself checked against simulation in ``test_joint_roots.py``); here
it comes from P's whole block by Sherman-Morrison, so the two must agree to rounding.  The law with the shift keeps
the law without it and is non-increasing in ``s`` bin by bin (constructed cases).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from rmtfl.theory import get_activation, make_target, two_step
from rmtfl.theory._classical.hermite import gauss_hermite_rule
from rmtfl.theory._two_step import finite_n as fn
from rmtfl.theory._two_step import sample_coupling as sc
from rmtfl.theory._two_step import sample_spikes
from rmtfl.theory._two_step.joint_roots import ExtremeColumns, JointProblem
from rmtfl.theory._two_step.left_gram import WeightedGram
from rmtfl.theory._two_step.sample_coupling import law_shift
from rmtfl.theory._two_step.sample_order import column_parts, tail_law
from rmtfl.theory._two_step.widened_bulk import master_eigs

from .mp_bulk import mp_bulk

QUADRATIC, HE3 = "hermite(0, 1, 0.5)", "hermite(0, 1, 0, 0.4082482904638631)"


@pytest.mark.parametrize("c", [0.3, 0.6])
def test_the_shift_is_the_schur_complement_of_the_joint_problem(c):
    # P of one direction (theta) leaning on one column of variance ell / d with squared overlap c^2
    N, theta, ell = 2000, 1.5, 2.5
    bulk = mp_bulk(N)
    g, wg = gauss_hermite_rule(16)
    G_U_w = WeightedGram(np.ones((g.size, 1)), wg * g * g)      # one direction: wg @ (g^2 tau)
    G_V, U = np.array([[theta**2]]), np.array([[theta * c]])
    jp = JointProblem(bulk, ExtremeColumns(V=np.full((1, bulk.a.size), ell), U=U), G_U_w, G_V, g, N)
    se = bulk.edge * (1 + 1e-7)
    n_spikes = int(np.sum(master_eigs(bulk, se, G_U_w, G_V, g, N) > 1.0))
    assert n_spikes == 1
    spike = math.sqrt((1 + theta**2) * (1 + theta**2) / theta**2)      # P's spike alone (closed form, docs/theory/two_step.md §2.1)
    shift = law_shift(bulk, G_U_w, G_V, g, N, [U], n_spikes)
    below = [s for s in np.linspace(se * 1.001, spike * 0.999, 12)]
    seen = 0
    for s in below:
        A, B, _ = jp.blocks(s)
        c_law = shift(s)[0][0]
        if not np.isfinite(c_law):          # repelled: P without the sample has its spike above s
            assert np.linalg.eigvalsh(A).max() >= 0.0
            continue
        assert c_law == pytest.approx(float(B[:, 0] @ np.linalg.solve(A, B[:, 0])), rel=1e-9, abs=1e-12)
        assert c_law < 0.0          # below the spikes of P the column is pushed down
        seen += 1
    assert seen >= 3
    assert shift(spike * 1.01) is None      # at and above the lowest spike the column keeps its own place


def _parts(N=1000, alphas=(0.2, 0.4)):
    act, tgt = get_activation(QUADRATIC), make_target(HE3)
    eta1, eta2 = N ** alphas[0], N ** alphas[1]
    st = fn.finite_n_setup(act, tgt, phi=2.0, batch="reused", phi2=None)
    _, _, _, tn, _, _, _, _ = fn.finite_n_grams(act, st, eta1=eta1, eta2=eta2, N=float(N), bulk=False)
    K = fn.extreme_ranks(N=N, psi=1.0, phi=2.0, phi2=None, batch="reused")
    bulk = fn.bulk_without(act, tgt, st, ranks=K, eta1=eta1, eta2=eta2, N=float(N), psi=1.0, tn=tn)
    rho = sample_spikes.second_step_move(act, st, eta1 * bulk.a)
    parts = column_parts(act, tgt, st, bulk, eta1=eta1, eta2=eta2, N=float(N), psi=1.0, ranks=K, rho=rho)[0]
    tau = lambda x: bulk.tau_rows(bulk.a, x)[0]  # noqa: E731
    return bulk, parts, tau


def test_a_law_with_no_shift_is_the_law_itself():
    bulk, parts, tau = _parts()
    plain = tail_law(tau, bulk.x_edge, (3 * bulk.edge) ** 2, parts, N=1000.0, psi=1.0, wa=bulk.wa)
    zero = tail_law(tau, bulk.x_edge, (3 * bulk.edge) ** 2, parts, N=1000.0, psi=1.0, wa=bulk.wa,
                    shift=lambda s: [np.zeros(len(p[0])) for p in parts])
    assert plain.uncoupled is None
    assert np.array_equal(zero.uncoupled.tails, plain.tails) and np.array_equal(zero.grid, plain.grid)
    # each bin's P(S > s) is made non-increasing; near the edge a bin's own can rise by about 10^-3 (here at the first
    # grid point, 5.4386e-3 against 5.4331e-3), as its strength's spread falls faster than its mean
    assert np.all(zero.tails >= plain.tails * (1 - 1e-12))
    assert np.allclose(zero.tails, plain.tails, rtol=2e-3, atol=1e-15)
    assert np.all(np.diff(zero.tails, axis=0) <= 1e-15)


def test_columns_past_the_cut_stay_above_and_the_rest_is_repelled():
    # every column pushed out below s0 (a spike of P there), none coupled above: the law below s0 is the share of
    # columns already past s0 on their own, and above it the law itself
    bulk, parts, tau = _parts()
    plain = tail_law(tau, bulk.x_edge, (3 * bulk.edge) ** 2, parts, N=1000.0, psi=1.0, wa=bulk.wa)
    s0 = float(plain.grid[20])
    law = tail_law(tau, bulk.x_edge, (3 * bulk.edge) ** 2, parts, N=1000.0, psi=1.0, wa=bulk.wa,
                   shift=lambda s: [np.full(len(p[0]), -np.inf) for p in parts] if s < s0 else None)
    assert np.allclose(law.tails[20:], plain.tails[20:], rtol=1e-12, atol=1e-300)
    assert np.allclose(law.tails[:20], law.tails[20][None, :], rtol=1e-12)
    assert np.all(np.diff(law.tails, axis=0) <= 1e-15)


def test_coupling_moves_the_quadratic_sigmas_single_samples_down_and_not_its_spikes():
    assert sc.COUPLE_SAMPLES is False        # measured, not kept (docs/theory/two_step.md §8.4)
    kw = dict(psi=1.0, phi=2.0, eta1=1000**0.2, eta2=1000**0.4, N=1000, extreme_samples="single")   # as measured
    plain = two_step(QUADRATIC, HE3, **kw)
    laws = [fn.predict_finite_n(get_activation(QUADRATIC), make_target(HE3), phi2=None, batch="reused",
                               **dict(kw, N=1000.0))]
    sc.COUPLE_SAMPLES = True
    try:
        coupled = two_step(QUADRATIC, HE3, **kw)
        laws.append(fn.predict_finite_n(get_activation(QUADRATIC), make_target(HE3), phi2=None, batch="reused",
                                       **dict(kw, N=1000.0)))
    finally:
        sc.COUPLE_SAMPLES = False
    spikes = lambda r: [o.singular_value for o in r.outliers if o.kind != "sample"]  # noqa: E731
    assert np.allclose(spikes(coupled), spikes(plain), rtol=2e-3)
    # the samples' law: the top single sample's median (11.14 on its own) comes to 9.19 (the mean of each rank comes
    # from the joint problem either way, docs/theory/two_step.md §8.3)
    medians = [[m for _, _, m in r.samples] for r in laws]
    assert medians[1][0] < 0.85 * medians[0][0]
    assert all(c <= p + 1e-9 for c, p in zip(medians[1], medians[0]))
