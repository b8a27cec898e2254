"""Top-k solvers (rmtfl.numerics._classical.topk): every method against the dense SVD, completeness at an edge,
the "auto" rule, errors.  Reference values: numpy's dense SVD / eigvalsh of the same matrix."""
import numpy as np
import pytest
from scipy.sparse.linalg import aslinearoperator

from rmtfl.numerics import gaussian_matrix, spiked_matrix, top_eigenpairs, top_singular_triplets
from rmtfl.numerics._classical.topk import DENSE_FRACTION, MIXED_MAX
from rmtfl.theory import edge_margin


U32 = 2.0**-24  # float32 unit roundoff


def _check_triplets(A, top):
    """``A v = s u`` and ``A^T u = s v``: to 1e-8 for the float64 solvers; for the mixed solver one of
    the two holds to rounding and the other has the reported residual, of order ``u_32 ||A||^2 / s``
    (the float32 eigenvectors' accuracy after one float64 Rayleigh-Ritz step; its module notes)."""
    for i in range(top.s.size):
        r1 = np.linalg.norm(A @ top.V[:, i] - top.s[i] * top.U[:, i])
        r2 = np.linalg.norm(A.T @ top.U[:, i] - top.s[i] * top.V[:, i])
        if top.method == "mixed":
            assert min(r1, r2) <= 1e-12 * top.s[0]
            assert max(r1, r2) <= 1.01 * top.residuals[i] + 1e-13 * top.s[0]
            assert top.residuals[i] <= 16 * U32 * top.s[0] ** 2 / top.s[i]
        else:
            assert max(r1, r2) <= 1e-8
            if top.method == "lanczos":  # the reported residual is that of the non-exact relation
                assert min(r1, r2) <= 1e-12 * top.s[0]
                assert max(r1, r2) <= 1.01 * top.residuals[i] + 1e-13 * top.s[0]


@pytest.mark.parametrize("method", ["mixed", "iterative", "arpack", "dense"])
@pytest.mark.parametrize("shape", [(300, 400), (400, 300)])
def test_top_triplets_match_dense_svd(method, shape):
    sp = spiked_matrix(*shape, [4.0, 2.5, 1.8], rng=3)
    A = sp.W
    s_all = np.linalg.svd(A, compute_uv=False)
    top = top_singular_triplets(A, 3, rng=1, method=method)
    assert top.method == {"mixed": "mixed", "iterative": "lanczos", "arpack": "svds", "dense": "dense"}[method]
    np.testing.assert_allclose(top.s, s_all[:3], rtol=1e-10)
    assert top.U.shape == (shape[0], 3) and top.V.shape == (shape[1], 3)
    _check_triplets(A, top)


def test_top_triplets_reproducible_and_edge_complete():
    sp = spiked_matrix(300, 300, [5.0, 3.0, 2.2, 1.6], rng=4)
    A = sp.W
    s_all = np.linalg.svd(A, compute_uv=False)
    edge = edge_margin(300, 300)
    n_true = int(np.sum(s_all > edge))
    # margin 0 and k = 1: the first solve cannot certify completeness, so k is doubled
    top = top_singular_triplets(A, 1, rng=7, edge=edge, margin=0, method="iterative")
    assert top.complete and top.n_above == n_true and top.s.size == n_true
    assert top.n_computed > 1
    np.testing.assert_allclose(top.s, s_all[:n_true], rtol=1e-10)
    again = top_singular_triplets(A, 1, rng=7, edge=edge, margin=0, method="iterative")
    np.testing.assert_array_equal(top.s, again.s)
    np.testing.assert_array_equal(top.U, again.U)
    dense = top_singular_triplets(A, 1, edge=edge, method="dense")
    assert dense.complete and dense.n_above == n_true
    no_edge = top_singular_triplets(A, 2, rng=0, method="iterative")
    assert not no_edge.complete and no_edge.n_above is None


def test_top_triplets_cases_and_errors():
    A = np.random.default_rng(0).standard_normal((20, 30))
    top = top_singular_triplets(A, 20, rng=0)  # k = min(N, d): dense
    assert top.method == "dense" and top.s.size == 20
    with pytest.raises(ValueError, match="k must"):
        top_singular_triplets(A, 21)
    with pytest.raises(ValueError, match="k must"):
        top_singular_triplets(A, 0)
    with pytest.raises(ValueError, match="method"):
        top_singular_triplets(A, 2, method="lanczos")
    with pytest.raises(ValueError, match="edge"):
        top_singular_triplets(A, 2, edge=-1.0)


def test_top_eigenpairs():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((250, 150))
    S = X @ X.T / 150 + 6.0 * np.outer(np.ones(250), np.ones(250)) / 250
    ev = np.linalg.eigvalsh(S)[::-1]
    for method in ("mixed", "iterative", "dense"):
        r = top_eigenpairs(S, 2, rng=0, method=method)
        assert r.method == {"mixed": "mixed", "iterative": "eigsh", "dense": "dense"}[method]
        np.testing.assert_allclose(r.values, ev[:2], rtol=1e-10)
        res = np.linalg.norm(S @ r.vectors - r.vectors * r.values[None, :], axis=0)
        if method == "mixed":  # residual reported, of order u_32 ||S|| (module notes of rmtfl.numerics._classical.mixed)
            np.testing.assert_allclose(res, r.residuals, rtol=0.01, atol=1e-13 * ev[0])
            assert np.all(r.residuals <= 16 * U32 * ev[0])
        else:
            assert np.all(res <= 1e-8)
    edge = 0.5 * (ev[1] + ev[0])
    r = top_eigenpairs(aslinearoperator(S), 1, rng=0, edge=edge, margin=0)
    assert r.complete and r.n_above == 1 and r.method == "eigsh"
    with pytest.raises(ValueError, match="square"):
        top_eigenpairs(X, 1)


@pytest.mark.parametrize("method", ["mixed", "iterative", "arpack", "dense"])
def test_outlier_just_above_the_edge_is_not_skipped(method):
    """A spike whose singular value sits 1.5 % above the TW edge (well inside the edge's fluctuation
    window of a single draw) must be returned and the result certified complete."""
    N = d = 400
    edge = edge_margin(N, d)
    base = gaussian_matrix(N, d, rng=11)
    s_base = np.linalg.svd(base, compute_uv=False)
    # theta for a target outlier location 1.015 * edge: s = sqrt((1 + theta^2)(psi + theta^2)) / theta, psi = 1
    target = 1.015 * edge
    theta = np.sqrt((target**2 - 2 + np.sqrt((target**2 - 2) ** 2 - 4)) / 2)
    sp = spiked_matrix(N, d, [6.0, theta], rng=11)
    s_all = np.linalg.svd(sp.W, compute_uv=False)
    n_true = int(np.sum(s_all > edge))
    assert s_base[0] < edge and n_true == 2  # the draw is as intended
    top = top_singular_triplets(sp.W, 1, rng=3, edge=edge, margin=0, method=method)
    assert top.complete and top.n_above == 2 and top.s.size == 2
    np.testing.assert_allclose(top.s, s_all[:2], rtol=1e-10)


def test_mixed_returns_every_value_above_the_edge_when_more_than_asked():
    """Twelve outliers, k = 2 and pad 0: the float32 solve must go back for all twelve."""
    N, d = 300, 500
    thetas = np.linspace(6.0, 3.0, 12)
    sp = spiked_matrix(N, d, thetas, rng=5)
    s_all = np.linalg.svd(sp.W, compute_uv=False)
    edge = edge_margin(N, d)
    n_true = int(np.sum(s_all > edge))
    assert n_true == 12
    top = top_singular_triplets(sp.W, 2, edge=edge, margin=0, method="mixed")
    assert top.complete and top.n_above == 12 and top.s.size == 12
    np.testing.assert_allclose(top.s, s_all[:12], rtol=1e-11)
    _check_triplets(sp.W, top)


def test_auto_rule():
    rng = np.random.default_rng(0)
    small = rng.standard_normal((150, 180))
    assert top_singular_triplets(small, 2).method == "dense"           # min(N, d) < 200
    mid = rng.standard_normal((300, 250))
    assert top_singular_triplets(mid, 2).method == "mixed"
    assert top_singular_triplets(mid, int(DENSE_FRACTION * 250)).method == "dense"  # large request
    assert top_singular_triplets(mid, 2, tol=1e-9).method == "lanczos"  # a residual tolerance asked for
    assert top_singular_triplets(mid.astype(np.float32), 2).method == "mixed"
    assert MIXED_MAX >= 1500


def test_auto_above_mixed_max_is_lanczos(monkeypatch):
    """Above MIXED_MAX 'auto' is Lanczos (checked at a small size by lowering MIXED_MAX); it returns
    the same values as the mixed solver below it, bulk values included."""
    import rmtfl.numerics._classical.topk as topk

    sp = spiked_matrix(400, 300, [5.0], rng=2)
    s_all = np.linalg.svd(sp.W, compute_uv=False)
    edge = edge_margin(400, 300)
    below = top_singular_triplets(sp.W, 8, rng=0, edge=edge)
    monkeypatch.setattr(topk, "MIXED_MAX", 250)
    above = top_singular_triplets(sp.W, 8, rng=0, edge=edge)
    assert (below.method, above.method) == ("mixed", "lanczos") and below.complete and above.complete
    np.testing.assert_allclose(above.s, s_all[:8], rtol=1e-10)
    np.testing.assert_allclose(below.s, s_all[:8], rtol=1e-11)


def test_non_finite_input_is_refused_by_name():
    from rmtfl.numerics import singular_values
    from rmtfl.numerics._classical.mixed import mixed_top_eigh, mixed_top_triplets

    A = np.random.default_rng(0).standard_normal((220, 230))
    A[3, 4] = np.nan
    for method in ("auto", "mixed", "iterative", "arpack", "dense"):
        with pytest.raises(ValueError, match="A must contain only finite values"):
            top_singular_triplets(A, 2, method=method)
    for method in ("svd", "gram"):
        with pytest.raises(ValueError, match="A must contain only finite values"):
            singular_values(A, method=method)
    with pytest.raises(ValueError, match="A must contain only finite"):
        mixed_top_triplets(A, 2)
    S = np.eye(220)
    S[0, 0] = np.inf
    with pytest.raises(ValueError, match="S must contain only finite values"):
        top_eigenpairs(S, 2)
    with pytest.raises(ValueError, match="S must contain only finite"):
        mixed_top_eigh(S, 2)


def test_complex_input_is_refused_by_name():
    """The spectra use real Gram matrices A A^T; complex input used to give silently wrong values
    (e.g. 14.98 for a top singular value of 20.84)."""
    from rmtfl.numerics import singular_values

    rng = np.random.default_rng(0)
    A = rng.standard_normal((50, 60)) + 1j * rng.standard_normal((50, 60))
    for f in (lambda: singular_values(A), lambda: singular_values(A, method="svd"),
              lambda: top_singular_triplets(A, 2), lambda: top_eigenpairs(A @ A.conj().T, 2)):
        with pytest.raises(ValueError, match="must be a real array"):
            f()
    # integers are fine (converted)
    B = rng.integers(-3, 4, size=(40, 30))
    np.testing.assert_allclose(singular_values(B), np.linalg.svd(B.astype(float), compute_uv=False), rtol=1e-10)
