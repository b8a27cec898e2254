"""A first-batch sample's column under the second step (rmtfl/theory/_two_step/first_batch.py;
docs/theory/two_step.md §8.3, "A first-batch sample in the second step").

Reference: the root of the 2 x 2 problem itself (its top eigenvalue equal to 1, found by brentq on the kernels of the
widened bulk), against which the row weights the laws take (the eigenvector at the column's own root) must give the
same root; and an odd sigma with an odd target (no part along M_2), whose columns stay as they are.
"""
import math

import numpy as np
import pytest
from scipy import optimize

import rmtfl.theory._two_step.finite_n as fn
from rmtfl.theory import get_activation, make_target
from rmtfl.theory._two_step import sample_spikes as ss
from rmtfl.theory._two_step.first_batch import carried_columns
from rmtfl.theory._two_step.widened_bulk import column_spike, row_coefficients

N = 1000


def _fresh_bulk(activation, target, alphas):
    act, tgt = get_activation(activation), make_target(target)
    st, bulk = fn.prediction_bulk(act, tgt, psi=1.0, phi=2.0, phi2=2.0, eta1=N ** alphas[0], eta2=N ** alphas[1],
                                  batch="fresh", N=N)
    return act, tgt, st, bulk


def _first_batch_columns(act, tgt, st, bulk, zs):
    ys = [float(np.ravel(tgt.links[0](np.array([z])))[0]) for z in zs]
    yb, wb = ss.y_law_truncated(tgt, bulk.zrange)
    lams = ss.extreme_eigenvalues(ys, zs, 2.0, yb, wb, bulk.zrange)
    _, rws = ss.sample_strengths(act, st, ys=ys, zs=zs, eta1=bulk.eta1, eta2=bulk.eta2, N=N, d=N,
                                 g=bulk.a * math.sqrt(N), wg=bulk.wa, which="first", lams=lams)
    base = 1.0 + bulk.functions(bulk.a)[:, 5]
    return base, np.array([base + ex for ex in rws])


def test_the_carried_columns_keep_the_root_of_the_two_by_two_problem():
    """The quadratic sigma at (0.4, 0.4), first-batch samples of z* = 3.9, 4.5, 5.2: each carried column's root is the
    2 x 2 problem's to 2e-3 (the grid's interpolation), and lies above the column alone's."""
    act, tgt, st, bulk = _fresh_bulk("hermite(0, 1, 0.5)", "hermite(0, 1, 0.5)", (0.4, 0.4))
    zs = [3.9, 4.5, 5.2]
    base, v = _first_batch_columns(act, tgt, st, bulk, zs)
    carried, _ = carried_columns(bulk, v, v * v, psi=1.0)
    _, _, beta, _, _ = row_coefficients(bulk.a, bulk.st, bulk.eta1, bulk.eta2, bulk.tn, bulk.rows)
    lam, wl, m1 = bulk.red.colh[:, 1], bulk.red.col_weights, bulk.st.ey1
    for vi, ci in zip(v, carried):
        def top(s):
            x = s * s
            w = bulk.wa * bulk.tau_rows(bulk.a, x)[0] * vi
            q = math.sqrt(x * float(wl @ ((lam - m1) ** 2 * bulk.tau_columns(lam, x))))
            P = np.array([[w.sum(), q * (w @ beta)], [q * (w @ beta), q * q * (w @ beta**2)]])
            return float(np.linalg.eigvalsh(P)[-1]) - 1.0
        root = optimize.brentq(top, bulk.edge * (1 + 1e-7), 20 * bulk.edge, xtol=1e-10)
        alone = column_spike(bulk, bulk.a, bulk.wa, vi - base)
        got = column_spike(bulk, bulk.a, bulk.wa, ci - base)
        assert got == pytest.approx(root, rel=2e-3)
        assert got > alone * 1.01


def test_a_sigma_without_a_part_along_m2_keeps_its_columns():
    """tanh with an odd target: the second step's part along M_2 vanishes (sigma'' and y both odd), and the columns
    come back as they went in."""
    act, tgt, st, bulk = _fresh_bulk("tanh", "hermite(0, 1, 0, 0.4082482904638631)", (0.4, 0.4))
    _, v = _first_batch_columns(act, tgt, st, bulk, [3.5, 4.0])
    got, got2 = carried_columns(bulk, v, v * v, psi=1.0)
    assert np.array_equal(got, v) and np.array_equal(got2, v * v)
