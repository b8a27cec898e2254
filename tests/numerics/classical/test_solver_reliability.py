"""Solvers that cannot lie (issue 14): exact degeneracy, a value dwarfing the bulk, exact zeros,
extreme scales and bad input, for every ``method`` of the top-k solvers and for
:func:`rmtfl.numerics.singular_values`, checked against ``numpy.linalg.svd`` (1e-10 relative),
vector orthonormality and residuals; plus ``hypothesis`` property tests on small matrices."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmtfl.numerics import (dense_spectrum_and_top, eigenvalues_of_gram, gram_eigenvalues, lanczos_triplets,
                            singular_values, top_eigenpairs, top_singular_triplets)

METHODS = ("auto", "dense", "mixed", "iterative", "arpack")


def _check_triplets(A, t, *, rtol=1e-10, n=None):
    """Values equal numpy's to ``rtol`` (relative, above ``1e-3 s_max``; absolute ``~u s_max`` below),
    orthonormal vectors, residuals ``||A v - s u||`` at rounding level."""
    ref = np.linalg.svd(A, compute_uv=False)
    n = t.s.size if n is None else n
    s = t.s[:n]
    big = ref[:n] >= 1e-3 * ref[0]
    np.testing.assert_allclose(s[big], ref[:n][big], rtol=rtol, atol=0)
    assert np.all(np.abs(s[~big] - ref[:n][~big]) <= 1e-12 * ref[0])
    for X in (t.U[:, :n], t.V[:, :n]):
        np.testing.assert_allclose(X.T @ X, np.eye(n), atol=1e-8)
    res = np.linalg.norm(A @ t.V[:, :n] - t.U[:, :n] * s, axis=0)
    assert res.max() <= 1e-9 * ref[0]


def _rot_degenerate(m, values, seed=0):
    Q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((m, m)))
    return (Q * np.asarray(values, dtype=float)) @ Q.T


# ------------------------------------------------------------------ 1. exact degeneracy
@pytest.mark.parametrize("method", METHODS)
def test_issue_degenerate_axis_aligned_never_loses_a_value(method):
    A = np.diag([5.0, 5.0, 5.0] + [1.0] * 1497)
    t = top_singular_triplets(A, 3, method=method, edge=2, rng=0)
    assert t.complete and t.n_above == 3 and t.s.size == 3
    np.testing.assert_allclose(t.s, 5.0, rtol=1e-12)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("mult,k", [(4, 3), (3, 3), (6, 2), (2, 5)])  # multiplicities straddling k
def test_degenerate_rotated_complete_means_all_present(method, mult, k):
    A = _rot_degenerate(300, [5.0] * mult + [3.0] * 2 + [1.0] * (300 - mult - 2), seed=mult)
    ref = np.linalg.svd(A, compute_uv=False)
    t = top_singular_triplets(A, k, method=method, edge=2, rng=1)
    assert t.complete and t.n_above == mult + 2
    _check_triplets(A, t)
    t0 = top_singular_triplets(A, k, method=method, rng=1)  # no edge: the top k values, copies included
    np.testing.assert_allclose(t0.s[:k], ref[:k], rtol=1e-10)


def test_lanczos_block_grows_with_the_multiplicity():
    A = _rot_degenerate(200, [4.0] * 5 + [1.0] * 195)
    r = lanczos_triplets(A, 1, edge=2.0, rng=0)
    assert r.certified and r.s.size == 5
    np.testing.assert_allclose(r.s, 4.0, rtol=1e-10)


@pytest.mark.parametrize("method", ("auto", "dense", "mixed", "iterative"))
def test_top_eigenpairs_degenerate(method):
    S = _rot_degenerate(300, [5.0] * 4 + [1.0] * 296, seed=3)
    r = top_eigenpairs(S, 2, method=method, edge=2.0, rng=0)
    assert r.complete and r.n_above == 4
    np.testing.assert_allclose(r.values, 5.0, rtol=1e-10)


# ------------------------------------------------------------------ 2. a value dwarfing the bulk
def _spiked(N, d, theta, seed=1):
    g = np.random.default_rng(seed)
    u, v = g.standard_normal(N), g.standard_normal(d)
    return g.standard_normal((N, d)) / np.sqrt(d) + theta * np.outer(u / np.linalg.norm(u), v / np.linalg.norm(v))


@pytest.mark.parametrize("theta", [1e3, 1e4, 1e8, 1e12])
@pytest.mark.parametrize("shape", [(300, 300), (200, 350)])
def test_singular_values_keep_the_bulk_under_a_huge_spike(theta, shape):
    A = _spiked(*shape, theta)
    ref = np.linalg.svd(A, compute_uv=False)
    s = singular_values(A)
    np.testing.assert_allclose(s[ref >= 1e-3 * ref[0]], ref[ref >= 1e-3 * ref[0]], rtol=1e-10)
    if theta >= 1e4:  # the whole bulk is dwarfed: the SVD route, numpy's values
        np.testing.assert_allclose(s, ref, rtol=1e-10)
        np.testing.assert_allclose(gram_eigenvalues(A), ref**2, rtol=1e-10)
        np.testing.assert_allclose(eigenvalues_of_gram(A)[: ref.size], ref**2, rtol=1e-10)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("theta", [1e4, 1e8])
def test_top_k_keep_the_bulk_under_a_huge_spike(method, theta):
    A = _spiked(300, 250, theta)
    t = top_singular_triplets(A, 10, method=method, rng=0)
    np.testing.assert_allclose(t.s, np.linalg.svd(A, compute_uv=False)[:10], rtol=1e-10)
    _check_triplets(A, t)
    s_all, s, U, V = dense_spectrum_and_top(A, 10)
    np.testing.assert_allclose(s_all, np.linalg.svd(A, compute_uv=False), rtol=1e-10)
    np.testing.assert_allclose(U.T @ U, np.eye(10), atol=1e-10)


# ------------------------------------------------------------------ 3. exact zeros
@pytest.mark.parametrize("method", METHODS)
def test_rank_deficient_gives_zeros_and_orthonormal_vectors(method):
    g = np.random.default_rng(0)
    A = g.standard_normal((50, 3)) @ g.standard_normal((3, 40))
    u = np.finfo(float).eps
    s = singular_values(A)
    assert np.all(s[3:] <= 10 * u * s[0])
    t = top_singular_triplets(A, 6, method=method, rng=0)
    assert np.all(t.s[3:] <= 10 * u * t.s[0])
    _check_triplets(A, t)
    s_all, _, U, V = dense_spectrum_and_top(A, 6)
    assert np.all(s_all[3:] <= 10 * u * s_all[0])
    np.testing.assert_allclose(U.T @ U, np.eye(6), atol=1e-10)


def test_zero_matrix():
    A = np.zeros((6, 4))
    assert singular_values(A).tolist() == [0.0] * 4
    t = top_singular_triplets(A, 2, edge=0.5)
    assert t.s.tolist() == [0.0, 0.0] and t.complete and t.n_above == 0
    np.testing.assert_allclose(t.U.T @ t.U, np.eye(2), atol=1e-12)


# ------------------------------------------------------------------ 4. extreme scales
@pytest.mark.parametrize("c", [1e200, 1e-200, 1e300, 1e-300, 2.0**600])
@pytest.mark.parametrize("method", METHODS)
def test_extreme_scales_are_rescaled(c, method):
    g = np.random.default_rng(2)
    A = g.standard_normal((60, 40))
    ref = np.linalg.svd(A, compute_uv=False)
    np.testing.assert_allclose(singular_values(A * c) / c, ref, rtol=1e-12)
    t = top_singular_triplets(A * c, 3, method=method, rng=0, edge=12.0 * c)
    np.testing.assert_allclose(t.s / c, ref[: t.s.size], rtol=1e-12)
    assert t.edge == 12.0 * c and t.n_above == int(np.sum(ref > 12.0))
    np.testing.assert_allclose(dense_spectrum_and_top(A * c, 2).singular_values / c, ref, rtol=1e-12)
    S = A.T @ A
    r = top_eigenpairs(S * c, 2, method="dense" if method == "arpack" else method, rng=0)
    np.testing.assert_allclose(r.values / c, ref[:2] ** 2, rtol=1e-11)


def test_gram_eigenvalues_overflow_is_refused():
    with pytest.raises(ValueError, match="overflow"):
        gram_eigenvalues(np.eye(3) * 1e200)
    with pytest.raises(ValueError, match="overflow"):
        eigenvalues_of_gram(np.eye(3) * 1e200)


# ------------------------------------------------------------------ 5. bad input
@pytest.mark.parametrize("f", [
    lambda A: singular_values(A), lambda A: gram_eigenvalues(A), lambda A: top_singular_triplets(A, 1),
    lambda A: dense_spectrum_and_top(A, 1), lambda A: top_eigenpairs(A, 1),
    lambda A: top_singular_triplets(A, 1, method="iterative")])
def test_nan_complex_and_shape_are_refused_by_name(f):
    for bad, msg in ((np.full((3, 3), np.nan), "finite"), (np.ones((3, 3)) * 1j, "real"),
                     (np.full((3, 3), np.inf), "finite"), (np.ones(3), "2-d")):
        with pytest.raises(ValueError, match=msg) as e:
            f(bad)
        assert "A " in str(e.value) or "S " in str(e.value)


# ------------------------------------------------------------------ hypothesis properties
@st.composite
def matrices(draw):
    N = draw(st.integers(2, 24))
    d = draw(st.integers(2, 24))
    m = min(N, d)
    seed = draw(st.integers(0, 2**31 - 1))
    g = np.random.default_rng(seed)
    kind = draw(st.sampled_from(["gauss", "rank", "degenerate", "spike", "zero-ish"]))
    if kind == "rank":
        r = draw(st.integers(0, m))
        A = g.standard_normal((N, r)) @ g.standard_normal((r, d))
    elif kind == "degenerate":
        mult = draw(st.integers(1, m))
        vals = np.r_[[draw(st.sampled_from([1.0, 3.0, 7.0]))] * mult, g.uniform(0.0, 1.0, m - mult)]
        Uq, _ = np.linalg.qr(g.standard_normal((N, m)))
        Vq, _ = np.linalg.qr(g.standard_normal((d, m)))
        if draw(st.booleans()):
            Uq, Vq = np.eye(N)[:, :m], np.eye(d)[:, :m]
        A = (Uq * vals) @ Vq.T
    elif kind == "spike":
        A = g.standard_normal((N, d))
        A[0, :] *= draw(st.sampled_from([1e4, 1e8, 1e12]))
    else:
        A = g.standard_normal((N, d)) * 1e-3
    return A * draw(st.sampled_from([1.0, 1e-200, 1e200, 2.0**-700, 3.0**300]))


@settings(max_examples=120, deadline=None, database=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(A=matrices(), k=st.integers(1, 24), method=st.sampled_from(METHODS + ("svd", "gram")),
       edge_frac=st.sampled_from([None, 0.05, 0.3, 0.9]))
def test_property_clean_answer_or_named_error(A, k, method, edge_frac):
    ref = np.linalg.svd(A, compute_uv=False)
    smax = ref[0]
    if method in ("svd", "gram"):
        s = singular_values(A, method="svd" if method == "svd" else "auto")
        big = ref >= 1e-3 * smax
        np.testing.assert_allclose(s[big], ref[big], rtol=1e-10)
        assert np.all(np.abs(s - ref) <= max(1e-10 * smax, 0.0) + 1e-10 * ref)
        return
    m = min(A.shape)
    edge = None if edge_frac is None else edge_frac * smax
    try:
        t = top_singular_triplets(A, k, method=method, rng=0, edge=edge)
    except ValueError as e:
        assert k > m and "k" in str(e)
        return
    assert k <= m and np.all(np.isfinite(t.s))
    n = t.s.size
    assert n >= k
    np.testing.assert_allclose(t.s[ref[:n] >= 1e-3 * smax], ref[:n][ref[:n] >= 1e-3 * smax], rtol=1e-10)
    assert np.all(np.abs(t.s - ref[:n]) <= 1e-12 * smax + 1e-10 * ref[:n])
    if smax > 0:
        Us, Vs = t.U / np.linalg.norm(t.U, axis=0), t.V / np.linalg.norm(t.V, axis=0)
        np.testing.assert_allclose(Us.T @ Us, np.eye(n), atol=1e-7)
        np.testing.assert_allclose(Vs.T @ Vs, np.eye(n), atol=1e-7)
        # "mixed" solves in float32 and refines only the values in float64: its vectors carry the documented
        # float32 residual (~u_32, rmtfl/numerics/_classical/topk.py); every other method is float64-accurate
        bound = 8 * np.finfo(np.float32).eps if t.method == "mixed" else 1e-8
        assert np.linalg.norm((A / smax) @ t.V - t.U * (t.s / smax), axis=0).max() <= bound
    if edge is not None and t.complete:
        assert t.n_above == int(np.count_nonzero(ref > edge * (1 + 1e-10)))  or \
            t.n_above == int(np.count_nonzero(ref > edge))


# ------------------------------------------------------------------ 6. the reported residual is the true one
def _measured(A, t):
    c = t.s[0]  # measured on A / s_1 (the norm of 1e200 * A overflows)
    B, s = A / c, t.s / c
    return c * np.maximum(np.linalg.norm(B @ t.V - t.U * s, axis=0), np.linalg.norm(B.T @ t.U - t.V * s, axis=0))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("c", [1e-3, 1.0, 1e200])
def test_reported_residuals_are_the_true_triplet_residuals(method, c):
    # the derandomised property-test case: a small matrix on the 1e-3 scale, where "mixed" reported 2e-10
    # (absolute, one relation only) for a triplet whose relative residual ||A v - s u|| / s_1 is 3.3e-8
    A = np.random.default_rng(260).standard_normal((23, 23)) * c
    t = top_singular_triplets(A, 7, method=method, rng=0)
    assert t.residuals is not None and t.residuals.shape == t.s.shape
    np.testing.assert_allclose(t.residuals, _measured(A, t), rtol=1e-6, atol=1e-15 * t.s[0])
    np.testing.assert_allclose(t.relative_residuals, t.residuals / t.s[0], rtol=1e-14)
    bound = 8 * np.finfo(np.float32).eps if t.method == "mixed" else 1e-13
    assert t.relative_residuals.max() <= bound


@pytest.mark.parametrize("method", ("auto", "dense", "mixed", "iterative"))
def test_reported_eigpair_residuals_are_true(method):
    S = _rot_degenerate(60, np.linspace(1.0, 3.0, 60), seed=4) * 1e-3
    r = top_eigenpairs(S, 4, method=method, rng=0)
    np.testing.assert_allclose(r.residuals, np.linalg.norm(S @ r.vectors - r.vectors * r.values, axis=0),
                               rtol=1e-6, atol=1e-15 * r.values[0])
    assert r.relative_residuals.max() <= (8 * np.finfo(np.float32).eps if r.method == "mixed" else 1e-13)


@pytest.mark.parametrize("method", METHODS)
def test_exact_zero_singular_values_are_exactly_zero(method):
    A = np.zeros((8, 6))
    A[:3, :3] = np.diag([3.0, 2.0, 1.0])  # three exact zero values (issue 14: they came back as ~1e-8)
    t = top_singular_triplets(A, 5, method=method, rng=0)
    assert t.s.tolist() == [3.0, 2.0, 1.0, 0.0, 0.0]
    np.testing.assert_allclose(t.U.T @ t.U, np.eye(5), atol=1e-14)
    np.testing.assert_allclose(t.V.T @ t.V, np.eye(5), atol=1e-14)
    assert singular_values(A).tolist() == [3.0, 2.0, 1.0, 0.0, 0.0, 0.0]


def test_residuals_of_a_float32_matrix_by_row_blocks(monkeypatch):
    import rmtfl.numerics._classical.certify as certify
    monkeypatch.setattr(certify, "_BLOCK_BYTES", 8 * 40 * 7)  # 7 rows of float64 at a time: several blocks
    A = np.random.default_rng(3).standard_normal((50, 40)).astype(np.float32)
    for method in ("dense", "iterative"):
        t = top_singular_triplets(A, 3, method=method, rng=0)
        np.testing.assert_allclose(t.residuals, _measured(A.astype(np.float64), t), rtol=1e-6,
                                   atol=1e-15 * t.s[0])
    r = top_eigenpairs(A.T @ A, 2, method="dense")
    S = (A.T @ A).astype(np.float64)
    np.testing.assert_allclose(r.residuals, np.linalg.norm(S @ r.vectors - r.vectors * r.values, axis=0), rtol=1e-6,
                               atol=1e-15 * r.values[0])
