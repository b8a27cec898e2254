"""The (alpha1, alpha2) maps at finite N: finite_n_outlier_map (docs/theory/two_step.md §6, §9.1)."""
import pytest


def test_finite_n_outlier_map():
    """At N = 400, alpha2 = 0.3: alpha1 = 0 gives one outlier (the first direction) above a bulk barely wider
    than MP (edge 1 + sqrt(psi) = 2); alpha1 = 0.3 puts the second spike above the widened edge (2.92; the
    simulated bulk top is 2.89 +- 0.09 over 3 seeds, rmtfl verify --quick)."""
    from rmtfl.theory import finite_n_outlier_map

    r = finite_n_outlier_map([0.0, 0.3], [0.3], activation="hermite(0, 1, 0.5)", target="linear", psi=1.0, phi=2.0,
                             N=400)
    assert r.count.tolist() == [[1, 2]]
    assert r.edge.shape == (1, 2) and r.edge[0, 1] > r.edge[0, 0] > 2.0
    assert len(r.outliers[0][1]) == 2
    # eta1 = 1, eta2 = 400^0.3 = 6.0: predicted 2.121, simulated bulk top 2.120 +- 0.025 (6 seeds, quadratic_bulk)
    assert 2.05 < r.edge[0, 0] < 2.2
    d = r.to_dict()                                   # a frozen Result, JSON-ready
    assert d["count"] == [[1, 2]] and len(d["outliers"][0][1]) == 2


def test_finite_n_outlier_map_needs_a_quadratic_sigma():
    from rmtfl.theory import finite_n_outlier_map

    with pytest.raises(ValueError, match="activation must be c0"):
        finite_n_outlier_map([0.3], [0.3], activation="tanh", target="linear", psi=1.0, phi=2.0, N=100)
