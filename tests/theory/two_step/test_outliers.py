"""Outlier and spike counts (docs/theory/two_step.md §4, §6, §10: exact integers)."""
import numpy as np
import pytest

from rmtfl.theory import one_step_spike_count, outlier_count, phase_boundary, step_size

TABLE = [((0, 0, 3), 0), ((0.2, 0.25, 3), 0), ((0.25, 0.3, 3), 1), ((0.3, 0.45, 3), 2),
         ((0.3, 0.45, 2), 1), ((0.45, 0.45, 5), 4), ((0.4, 0.35, None), 3)]


@pytest.mark.parametrize("args,lam", TABLE)
def test_lambda_table(args, lam):
    a1, a2, L = args
    assert int(outlier_count(a1, a2, degree=L)) == lam


def test_critical_lines():
    r = outlier_count(0.45, 0.45, degree=5)          # r = 9, cap 4 binds
    assert r.count == 4 and r.critical is False
    r = outlier_count(0.45, 0.45)                     # r = 9 exactly, no cap
    assert r.count == 9 and r.critical is True
    r = outlier_count(0.35, 0.3)                      # 0.3 / 0.15 = 2 exactly
    assert r.count == 2 and r.critical is True
    assert 0.3 / (0.5 - 0.35) < 2.0                   # float division lands below 2 (1.9999999999999996)
    assert outlier_count("1/6", "1/3").critical is True


def test_vectorised_grid():
    a = np.linspace(0, 0.45, 10)
    A1, A2 = np.meshgrid(a, a)
    r = outlier_count(A1, A2, degree=4)
    assert r.count.shape == (10, 10) and r.critical.shape == (10, 10)
    assert r.count.max() == 3 and r.count.min() == 0
    assert np.asarray(r).dtype.kind == "i"


def test_ell():
    assert [int(one_step_spike_count(a)) for a in (0.1, 0.3, 0.35, 0.39)] == [1, 2, 3, 4]
    assert one_step_spike_count(0.25).critical and one_step_spike_count(0.0).critical
    # interval (l-1)/(2l), l/(2l+2): ell = 3 on (1/3, 3/8)
    assert int(one_step_spike_count(0.34)) == 3 and int(one_step_spike_count(0.374)) == 3
    assert one_step_spike_count([0.1, 0.3]).count.tolist() == [1, 2]


def test_step_size_and_boundary():
    assert step_size(2.0, N=10_000, alpha=0.25) == pytest.approx(20.0, rel=1e-14)
    with pytest.raises(TypeError):
        step_size(2.0, 10_000, 0.25)                  # N and alpha are keyword-only
    assert phase_boundary(3, 0.4) == pytest.approx(0.3)


@pytest.mark.parametrize("a1,a2", [(0.5, 0.1), (-0.1, 0.1), (0.1, 0.7)])
def test_bad_alpha(a1, a2):
    with pytest.raises(ValueError, match="alpha"):
        outlier_count(a1, a2)


def test_bad_inputs():
    with pytest.raises(ValueError, match="alpha"):
        one_step_spike_count(0.5)
    with pytest.raises(ValueError, match="alpha"):
        step_size(1.0, N=100, alpha=0.5)
    with pytest.raises(ValueError, match="N"):
        step_size(1.0, N=0, alpha=0.1)
    with pytest.raises(ValueError, match="degree"):
        outlier_count(0.1, 0.1, degree=0)
    with pytest.raises(TypeError):
        outlier_count(0.1, 0.1, 3)                    # degree is keyword-only


def test_issue14_errors_name_the_exponent():
    from rmtfl.theory import one_step_spike_count, outlier_count, phase_boundary, step_size
    for bad, err in ((float("nan"), ValueError), ("x", ValueError), (None, TypeError)):
        with pytest.raises(err, match="alpha1"):
            outlier_count(bad, 0.3)
        with pytest.raises(err, match="alpha"):
            one_step_spike_count(bad)
    with pytest.raises(ValueError, match="alpha1"):
        phase_boundary(2, float("nan"))
    with pytest.raises(ValueError, match="N must be a positive integer"):
        step_size(1.0, N=2.5, alpha=0.2)
    assert step_size(1.0, N=1e4, alpha=0.25) == pytest.approx(10.0)
