"""benchmarks/diag_row_poles.py: the tail of a weighted sum of chi-squares, and its command line."""
import numpy as np
import pytest
from scipy import stats

from benchmarks.diag_row_poles import main, tail_probability


@pytest.mark.parametrize("c,m,tol", [(0.8, 1.0, 2e-4), (0.5, 1.0, 2e-4), (0.5, 4.0, 1e-6), (1.3, 30.0, 1e-6)])
def test_the_tail_of_one_scaled_chi_square_is_scipys(c, m, tol):
    """P(c chi^2_m / m > 1) = P(chi^2_m > m / c), scipy's survival function.  One chi^2_1 alone has the slowest tail
    of a characteristic function, |phi(u)| ~ u^(-1/2): cut at u = 1e5 the inversion is within 1e-4 (measured 7e-5
    and 9e-5); from two degrees of freedom on within 1e-6."""
    assert tail_probability(np.array([c]), np.array([m])) == pytest.approx(stats.chi2.sf(m / c, m), abs=tol)


def test_the_tail_of_two_equal_parts_is_that_of_their_pooled_chi_square():
    """c chi^2_2/2 + c chi^2_2/2 = (c/2) chi^2_4 (two parts of one law), against scipy."""
    got = tail_probability(np.array([0.45, 0.45]), np.array([2.0, 2.0]))
    assert got == pytest.approx(stats.chi2.sf(4 / 0.9, 4), abs=1e-6)


@pytest.mark.parametrize("points", [["fresh:0.6,0.1"], ["both:0.4,0.4"], ["fresh:0.4"]])
def test_bad_points_exit_2(points, capsys):
    with pytest.raises(SystemExit) as e:
        main(["--points", *points])
    assert e.value.code == 2 and "--points" in capsys.readouterr().err
