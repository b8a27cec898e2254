"""The widened bulk's columns and rows (docs/theory/two_step.md §8.2, "The bulk's columns", "Widened bulk")."""
import time

import numpy as np
import pytest

from rmtfl.numerics._two_step.model import sample_targets
from rmtfl.theory import make_target
from rmtfl.theory._two_step.sample_spikes import bulk_cut, outlier_shares
from rmtfl.theory._two_step.widened_bulk import MAX_OUTLIER_SHARE, column_law_cdf, m_law_cdf

from .mp_bulk import mp_bulk


def test_bulk_columns_take_the_eigenvalues_of_m_below_its_outliers():
    """He1 + He2/2, d = 1000, n = 2000, the bulk without the 12 most extreme samples: the eigenvalues of the whole
    M = X^T diag(y) X / n below its 12 outliers, mean of 6 draws, against the column law's quantiles (ranks 1-30 below
    the outliers).  Measured: within 2.6 % (1.1 % at the top rank: 2.898 against 2.868); the law of M over the samples
    inside the cut, which the bulk used before, puts the top rank at 3.151, 10 % high.  The fluctuation of one draw's
    eigenvalue there is about 0.05 (2 %), so 3 % for a mean of six is about three standard errors."""
    tgt, d, n = make_target("hermite(0, 1, 0.5)"), 1000, 2000
    zr = bulk_cut(tgt, n, 12)
    p_plus, p_minus = outlier_shares(tgt, zr)
    k_plus, k_minus = round(n * p_plus), round(n * p_minus)
    assert (k_plus, k_minus) == (12, 0)           # y = z + (z^2 - 1)/2 >= -1: every extreme sample has y > 0
    ranks = np.arange(30)
    xg, F = column_law_cdf(tgt, n / d, zr)
    law = np.interp(1 - (ranks + 0.5) / (d - k_plus), F, xg)
    xc, Fc = m_law_cdf(tgt, n / d, zr)
    inside = np.interp(1 - (ranks + 0.5) / d, Fc, xc)
    drawn = []
    for seed in range(6):
        rng = np.random.default_rng(seed)
        X = rng.standard_normal((n, d))
        y = sample_targets(X, target=tgt)
        drawn.append(np.linalg.eigvalsh(X.T @ (y[:, None] * X) / n)[::-1][k_plus:k_plus + ranks.size])
    mean = np.mean(drawn, axis=0)
    assert np.abs(law / mean - 1).max() < 0.03
    assert inside[0] / mean[0] - 1 > 0.05


def test_the_column_law_without_a_cut_is_the_whole_law_and_a_long_batch_keeps_the_cut():
    tgt = make_target("hermite(0, 1, 0.5)")
    xg, F = column_law_cdf(tgt, 2.0)
    xw, Fw = m_law_cdf(tgt, 2.0)
    assert np.array_equal(xg, xw) and np.array_equal(F, Fw)
    # 12 extreme samples of a batch of 48 at d = 12: the outliers would be every eigenvalue of M (n p / d = 1)
    zr = bulk_cut(tgt, 48, 12)
    assert 4.0 * sum(outlier_shares(tgt, zr)) > MAX_OUTLIER_SHARE
    xc, Fc = column_law_cdf(tgt, 4.0, zr)
    xi, Fi = m_law_cdf(tgt, 4.0, zr)
    assert np.array_equal(xc, xi) and np.array_equal(Fc, Fi)


@pytest.mark.parametrize("target", ["hermite(0, 1, 0.5)", "hermite(0, 1, 0, 0.4082482904638631)"])
def test_the_column_law_is_a_cdf(target):
    tgt = make_target(target)
    zr = bulk_cut(tgt, 2000, 12)
    xg, F = column_law_cdf(tgt, 2.0, zr)
    assert np.all(np.diff(F) >= 0) and F[0] == 0.0 and F[-1] == 1.0


def test_a_band_of_extreme_samples_is_placed_at_their_samples():
    """He1 + He3/sqrt6 (heavy tails on both sides), d = 1000, n = 2000: the whole law of M has a band of its own above
    a gap (2.70 to 2.92, 14.5 eigenvalues per 1000), whose quantiles put ranks 7-14 from 3.84 down to 3.10 and rank 15
    back at the bulk's edge.  A draw descends without a gap; the columns take the band's samples at y / phi, which
    leaves out the bulk's push and lies low: against 16 draws (seeds 0-15, both sides pooled, the law being
    symmetric), ranks 7-26 within 2.5-4.7 % below; against the 6 draws here (seeds 100-105) up to 7.5 % below, the
    law of a heavy-tailed batch's ranks being wide (docs/theory/two_step.md §8.2, "The bulk's columns").  The band's
    own quantiles were up to 7 % above with a jump of 0.43 at rank 15, which the last assertion refuses."""
    tgt, d, n = make_target("hermite(0, 1, 0, 0.4082482904638631)"), 1000, 2000
    zr = bulk_cut(tgt, n, 12)
    k_plus, k_minus = (round(n * p) for p in outlier_shares(tgt, zr))
    assert (k_plus, k_minus) == (6, 6)
    ranks = np.arange(20)
    xg, F = column_law_cdf(tgt, n / d, zr)
    law = np.interp(1 - (ranks + 0.5) / (d - 12), F, xg)
    sides = []
    for seed in range(6):
        rng = np.random.default_rng(100 + seed)
        X = rng.standard_normal((n, d))
        lam = np.linalg.eigvalsh(X.T @ (sample_targets(X, target=tgt)[:, None] * X) / n)
        sides += [lam[::-1][k_plus:k_plus + ranks.size], -lam[k_minus:k_minus + ranks.size]]
    mean = np.mean(sides, axis=0)
    assert np.all(law < mean) and np.abs(law / mean - 1).max() < 0.08
    assert -np.diff(law).max() < 2 * -np.diff(mean).max()


@pytest.mark.slow
@pytest.mark.parametrize("act,a1,a2", [("tanh", 0.4, 0.4), ("erf", 0.4, 0.4), ("tanh", 0.0, 0.4)])
def test_bulk_top_values_against_simulation(act, a1, a2):
    """A linear target (no sample makes an outlier), N = d = 1000, n = 2000, reused batch, 8 draws: the bulk's
    predicted top values (``bulk_top``, the values the count rule reads, docs/theory/two_step.md §9.2) at ranks 3-12
    below the outliers, on average within 3 s.e. of the simulated ranks' average.  Before the sample's own term,
    the split's remainder and the two steps' correlated remainders entered the rows (docs/theory/two_step.md §8.2,
    "The sample's own term and the two remainders") they were low by 0.016 (tanh), 0.017 (erf) and 0.0054 (tanh at
    (0, 0.4)), 5-13 s.e. (1.1e-3 to 1.3e-3); then by 0.0010, 0.0006 and 0.0001; with the second step's response to
    the first step's remainder (docs/theory/two_step.md §8.2) by 0.0028, 0.0035 and 0.0001; with the density read
    over all rows alike as well (docs/theory/two_step.md §9.2) they are 0.0002, 0.0001 and 0.0005 above (measured,
    seeds 9000-9007); read where k - 0.72 values are expected above them, as a real matrix's lie
    (docs/theory/two_step.md §9.2), 0.0016, 0.0015 and 0.0019 above (s.e. 0.0013, 0.0013, 0.0011)."""
    from rmtfl.numerics import simulate_two_step
    from rmtfl.theory import get_activation
    from rmtfl.theory._two_step.finite_n import predict_finite_n

    N = 1000
    tgt = make_target("linear")
    r = predict_finite_n(get_activation(act), tgt, psi=1.0, phi=2.0, phi2=None, eta1=N**a1, eta2=N**a2,
                         batch="reused", N=float(N))
    roots = len(r.locations) + len(r.samples)
    S = np.array([np.sort(simulate_two_step(act, tgt, N=N, d=N, n=2 * N, eta1=N**a1, eta2=N**a2, k=40,
                                            rng=9000 + i).singular_values)[::-1] for i in range(8)])
    sim = S[:, roots + 2:roots + 12].mean(axis=1)             # each draw's ranks 3-12 below the outliers
    gap = float(np.mean(r.bulk_top[2:12])) - sim.mean()
    assert abs(gap) <= 3 * sim.std(ddof=1) / np.sqrt(len(sim)), (gap, sim)


def _own_profile_gap(act, tgt, draws=16, ranks=6, N=1000):
    """``(gap, s.e., mean)``: the bulk's top values (ranks 1 to ``ranks``, their mean) less the mean over ``draws``
    Gaussian matrices
    of the bulk's own profile (entries of variance ``S(a_j, lambda_l) / d`` at its row and column nodes, each node
    repeated by its weight; seeds 700, 701, ...), reused batch, ``N = d``, ``n = 2N``, ``(0.4, 0.4)``."""
    from rmtfl.theory import get_activation
    from rmtfl.theory._two_step.finite_n import bulk_without, extreme_ranks, finite_n_grams, finite_n_setup

    a, t = get_activation(act), make_target(tgt)
    st = finite_n_setup(a, t, phi=2.0, batch="reused", phi2=None)
    tn = finite_n_grams(a, st, eta1=N**0.4, eta2=N**0.4, N=N, bulk=True)[3]
    K = extreme_ranks(N=N, psi=1.0, phi=2.0, phi2=None, batch="reused")
    bulk = bulk_without(a, t, st, ranks=K, eta1=N**0.4, eta2=N**0.4, N=N, psi=1.0, tn=tn)
    F, C = bulk.red.at_nodes(N, N)
    assert F.shape[0] == N and C.shape[0] == N
    sd = np.sqrt(np.clip(F @ C.T, 0.0, None) / N)
    tops = np.array([np.linalg.svd(sd * np.random.default_rng(700 + k).standard_normal((N, N)),
                                   compute_uv=False)[:ranks].mean() for k in range(draws)])
    return float(np.mean(bulk.top_values(ranks))) - tops.mean(), tops.std(ddof=1) / np.sqrt(draws), tops.mean()


@pytest.mark.slow
@pytest.mark.parametrize("act", ["tanh", "gelu"])
def test_bulk_top_values_are_those_of_a_gaussian_matrix_of_its_own_profile(act):
    """Where the bulk ends in a square-root edge its top values (the density read where k - 0.72 values are expected
    above, docs/theory/two_step.md §9.2) are those of Gaussian matrices of its own profile: ranks 1-3, on average
    within 3 s.e. of 32 draws (He1 + He3/sqrt(6) target).  Measured over 64 draws: tanh +0.0002, gelu +0.0048
    (s.e. 0.0008, 0.0025); read at k - 1/2, as before, -0.0022 and -0.0024."""
    gap, se, _ = _own_profile_gap(act, "hermite(0, 1, 0, 0.4082482904638631)", draws=32, ranks=3)
    assert abs(gap) <= 3 * se, (gap, se)


@pytest.mark.slow
def test_in_a_thin_tail_the_bulk_top_values_lie_a_little_high():
    """The quadratic sigma with He1 + He2/2 at (0.4, 0.4): the heaviest profile of the acceptance grids (entries of
    variance up to 1.1 at an edge of 7.6), whose density ends in a thin tail of single heavy rows.  There the top
    values read off the density lie above those of Gaussian matrices of the same profile (ranks 1-6, 16 draws:
    +0.097 on 6.003, s.e. 0.029; read at k - 1/2, +0.014; docs/theory/two_step.md §9.2): the readout of a
    square-root edge does not fit a tail of nearly independent rows."""
    gap, se, mean = _own_profile_gap("hermite(0, 1, 0.5)", "hermite(0, 1, 0.5)")
    assert 0.0 < gap < 0.03 * mean, (gap, se, mean)


def _remainder_covariance(batch, seed, N=1000):
    """One draw (tanh, linear target, N = d, n = 2N, eta_t = N^0.4): per row, the inner product of the first step's
    remainder R_1 (W_1 - W_0 less its M part) with the second step S_2 = W_2 - W_1, both with beta_hat and a
    projected out; and the rows' model of it with and without the identity response (docs/theory/two_step.md §8.2,
    "The second step's response to the first step's remainder")."""
    from rmtfl.numerics import gd_steps, init_first_layer, init_second_layer, sample_inputs
    from rmtfl.theory import get_activation
    from rmtfl.theory._two_step.finite_n import finite_n_grams, finite_n_setup

    act, tgt, eta, phi = get_activation("tanh"), make_target("linear"), N**0.4, 2.0
    st = finite_n_setup(act, tgt, phi=phi, batch=batch, phi2=phi if batch == "fresh" else None)
    _, _, _, tn, _, _, rows, _ = finite_n_grams(act, st, eta1=eta, eta2=eta, N=N, bulk=True)
    order = np.argsort(tn)
    rng = np.random.default_rng(seed)
    W0, a = init_first_layer(N, N, rng=rng), init_second_layer(N, rng=rng)
    batches = [(X, sample_targets(X, target=tgt)) for X in (sample_inputs(2 * N, N, rng=rng) for _ in range(2))]
    (X1, y1), (X2, y2) = batches if batch == "fresh" else batches[:1] * 2
    W1 = gd_steps(act, W0, a, (X1, y1), etas=[eta])
    W2 = gd_steps(act, W1, a, (X2, y2), etas=[eta])
    Q = np.linalg.qr(np.column_stack([X1.T @ y1, X2.T @ y2]))[0]
    an = a / np.linalg.norm(a)

    def project(A):
        A = A - (A @ Q) @ Q.T
        return A - np.outer(an, an @ A)

    t = eta * a
    R1 = project(W1 - W0 - (t * st.mu2)[:, None] * (W0 @ (X1.T @ (y1[:, None] * X1)) / (2 * N)))
    S2 = project(W2 - W1)

    def at(k):
        return np.interp(t, tn[order], rows[k][order])

    identity = eta * a * at(4) * np.sum(R1 * R1, axis=1)
    same = (1 + eta * a * at(2)) * eta * eta * a * a * st.ey2 * at(3) / phi      # zero for fresh batches
    return a * np.sqrt(N), np.sum(R1 * S2, axis=1), same + identity, same


@pytest.mark.parametrize("batch", ["fresh", "reused"])
def test_the_second_step_carries_the_first_steps_remainder(batch):
    """The second step's identity part (the split of y c, Stein coefficient c) acts on the first step's remainder:
    tanh, linear target, N = 1000, eta_t = N^0.4, two draws.  Their covariance per row, measured (|g| = sqrt(N)|a_j| in
    [1.2, 2) and [2, 4)): fresh -0.0028, -0.0124 against the rows' -0.0028, -0.0121 (0 without the term); reused
    -0.0015, -0.0227 against -0.0011, -0.0201 (+0.0020, -0.0092 without it; the same samples' remainders, the
    ``cross`` term, make the rest).  Fresh within 15 % (a bin's mean moves by about 5 % between draws); reused at
    least twice as close as without the term."""
    parts = [_remainder_covariance(batch, seed) for seed in (5, 6)]
    g = np.concatenate([p[0] for p in parts])
    meas, model, without = (np.concatenate([p[k] for p in parts]) for k in (1, 2, 3))
    for lo, hi in [(1.2, 2.0), (2.0, 4.0)]:
        m = (np.abs(g) >= lo) & (np.abs(g) < hi)
        got, want, bare = meas[m].mean(), model[m].mean(), without[m].mean()
        if batch == "fresh":
            assert abs(got - want) <= 0.15 * abs(want), (lo, got, want)
        else:
            assert abs(got - want) <= 0.5 * abs(got - bare), (lo, got, want, bare)


@pytest.mark.parametrize("act,batch", [("tanh", "reused"), ("hermite(0, 1, 0.5)", "fresh"), ("tanh", "fresh")])
def test_the_bulks_density_holds_every_eigenvalue(act, batch):
    """psi = 1/2 (H H^T of full rank, its spectrum away from 0), N = 500, eta_t = N^0.4, linear target: the density the
    bulk's top values are read from (docs/theory/two_step.md §9.2) integrates to N eigenvalues, to the grid's
    trapezoid error (0.3-0.6 % here).  It was read off A_0 = psi <f_0 t>, which weights the rows by f_0 = (1 + e_j)^2
    (fresh: plus the first step's M part): 0.911, 1.144 and 0.921 times N for these three profiles."""
    from rmtfl.theory import get_activation
    from rmtfl.theory._two_step.finite_n import bulk_without, finite_n_grams, finite_n_setup

    a, tgt, N = get_activation(act), make_target("linear"), 500
    st = finite_n_setup(a, tgt, phi=2.0, batch=batch, phi2=2.0 if batch == "fresh" else None)
    tn = finite_n_grams(a, st, eta1=N**0.4, eta2=N**0.4, N=N, bulk=False)[3]
    bulk = bulk_without(a, tgt, st, ranks=12, eta1=N**0.4, eta2=N**0.4, N=N, psi=0.5, tn=tn)
    x = np.linspace(1e-3, 1.02, 400) * bulk.x_edge
    _, above = bulk.resolvent_below(x, 0.5 * (x[1] - x[0]), levels=10, sweeps=20)
    assert abs(bulk.red.rowf[:, 0] @ bulk.wa - 1) > 0.05          # rows weighted unevenly by f_0
    assert abs(above[0] / N - 1) < 0.01


def test_the_column_kernel_averages_to_the_mean_column_kernel_and_gives_a_heavy_row_its_strength():
    """``tau_columns`` at the bulk's own column nodes, weighted by them, is ``<-tt>`` of ``tau_rows``; and a row's
    strength over the bulk's columns, ``E_l[S(a, lambda_l) tau~_l]``, matches its exact value in one draw of the
    bulk's profile (quadratic sigma, (0.3, 0.3), N = d = 600: a matrix with independent random signs of size
    ``sqrt(S(a_j, lambda_l) / d)``) for the eight heaviest rows, each against the matrix without it.  What is left is
    the rows' cross terms, about 5 % of a row's strength at this size (measured: -8.3 % to +4.4 %, mean -1.7 %): the
    mean within 4 %, each row within 15 %."""
    import math

    from rmtfl.theory import get_activation
    from rmtfl.theory._two_step import finite_n

    N, eta = 600, 600 ** 0.3
    act, tgt = get_activation("hermite(0, 1, 0.5)"), make_target("hermite(0, 1, 0.5)")
    st = finite_n.finite_n_setup(act, tgt, phi=2.0, batch="reused", phi2=None)
    tn = finite_n.finite_n_grams(act, st, eta1=eta, eta2=eta, N=float(N), bulk=False)[3]
    bulk = finite_n.bulk_without(act, tgt, st, ranks=0, eta1=eta, eta2=eta, N=float(N), psi=1.0, tn=tn)
    x = 1.3 * bulk.x_edge
    lam, wl = bulk.red.colh[:, 1], bulk.red.Pl[:, 0]
    tt = bulk.tau_columns(lam, x)
    assert abs(float(wl @ tt) - bulk.tau_rows(bulk.a, x)[1]) < 1e-12 * abs(bulk.tau_rows(bulk.a, x)[1])
    rng = np.random.default_rng(4)
    a = rng.standard_normal(N) / math.sqrt(N)
    lam_d = np.repeat(lam, np.round(wl * N).astype(int))[:N]
    lam_d = np.concatenate([lam_d, np.full(N - lam_d.size, lam[-1])])
    S = bulk.functions(a) @ bulk.red.colh[np.searchsorted(lam, lam_d)].T        # (N, d) profile
    # signs of fixed size: each entry's square is its variance, so only the deterministic equivalent is tested
    H = rng.choice([-1.0, 1.0], (N, N)) * np.sqrt(np.clip(S, 0, None) / N)
    strength = S @ bulk.tau_columns(lam_d, x) / N
    heavy = np.argsort(-strength)[:8]
    exact = []
    for j in heavy:                     # each row against the matrix without it
        rest = np.delete(H, j, axis=0)
        exact.append(H[j] @ np.linalg.solve(x * np.eye(N) - rest.T @ rest, H[j]))
    ratio = np.array(exact) / strength[heavy]
    assert abs(ratio.mean() - 1) < 0.04 and np.abs(ratio - 1).max() < 0.15


def test_the_kernels_inside_the_bulk_are_none_at_once():
    """Below the fold no real solution continues the kernels (their continuation would creep toward the edge without
    end): ``kernels``, and the row and column kernels built on them, are ``None`` there, and solved just above it."""
    bulk = mp_bulk(1000)
    t0 = time.perf_counter()
    assert bulk.kernels(0.9 * bulk.x_edge) is None
    assert bulk.tau_rows(bulk.a, 0.95 * bulk.x_edge) == (None, None)
    assert bulk.tau_columns(np.array([1.0]), 0.99 * bulk.x_edge) is None
    assert time.perf_counter() - t0 < 1.0
    assert bulk.kernels(1.001 * bulk.x_edge) is not None
