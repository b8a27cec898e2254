"""The shared input checks (rmtfl/_validate.py): every error names the parameter."""
import numpy as np
import pytest

from rmtfl._validate import check_magnitude, check_no_overflow, check_points


def test_check_points_lets_nan_through_and_refuses_inf_and_range():
    out = check_points("t", [0.5, np.nan, -1.0], -1.0, 1.0)
    assert np.isnan(out[1]) and out[0] == 0.5
    with pytest.raises(ValueError, match="t must be finite"):
        check_points("t", [0.0, np.inf])
    with pytest.raises(ValueError, match=r"t must lie in \[-1.0, 1.0\]"):
        check_points("t", [1.5], -1.0, 1.0)
    with pytest.raises(TypeError, match="t must be real"):
        check_points("t", [1j])
    with pytest.raises(TypeError, match="t must be a numeric array"):
        check_points("t", "abc")


def test_check_no_overflow_names_the_parameter_and_keeps_nan_passthrough():
    assert check_no_overflow("z", np.array([1.0, 2.0])).tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="z is too large"):
        check_no_overflow("z", np.array([1.0, np.inf]), np.array([1.0, 1e300]))
    out = check_no_overflow("z", np.array([np.nan, 1.0]), np.array([np.nan, 1.0]))  # NaN in -> NaN out
    assert np.isnan(out[0])


def test_check_magnitude():
    assert check_magnitude("X", np.zeros((2, 2))).shape == (2, 2)
    assert check_magnitude("X", [[1e20]]).shape == (1, 1)
    for bad in ([[1e200]], [[1e-200]]):
        with pytest.raises(ValueError, match="X has entries of magnitude"):
            check_magnitude("X", bad)
