"""The inputs the finite-N two-step route takes, and the errors that name what it does not
(rmtfl/theory/_two_step/finite_n_inputs.py; docs/theory/two_step.md §8.2)."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmtfl.theory import make_target
from rmtfl.theory._classical.activations import get_activation
from rmtfl.theory._two_step.finite_n import MAX_TARGET_DEGREE
from rmtfl.theory._two_step.finite_n_inputs import check_finite_n_inputs, takes_activation

TANH, LINK = get_activation("tanh"), make_target("hermite(0, 1, 0.5)")


@pytest.mark.parametrize("name, taken", [("tanh", True), ("gelu", True), ("hermite(0, 1, 0.5)", True),
                                         ("relu", True), ("step", False), ("relu^2", False)])
def test_the_route_takes_relu_and_smooth_sigma_with_derivatives(name, taken):
    assert takes_activation(get_activation(name)) is taken


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.integers(max_value=1), st.integers(min_value=10**9 + 1),
                 st.floats(allow_nan=True, allow_infinity=True).filter(lambda v: not (v.is_integer()
                                                                                      and 2 <= v <= 1e9)),
                 st.booleans(), st.text(max_size=3)))
def test_a_width_that_is_not_an_integer_in_range_names_N(N):
    with pytest.raises(ValueError, match=r"^N must be an integer width in \[2, 1e\+09\]"):
        check_finite_n_inputs(TANH, LINK, N)


@given(st.integers(min_value=2, max_value=10**9))
def test_an_integer_width_in_range_is_taken(N):
    check_finite_n_inputs(TANH, LINK, N)
    check_finite_n_inputs(TANH, LINK, float(N))


def test_the_other_inputs_name_their_parameter_and_range():
    with pytest.raises(ValueError, match="^activation must be relu or smooth"):
        check_finite_n_inputs(get_activation("step"), LINK, 1000)
    with pytest.raises(ValueError, match="^target must be single-index"):
        check_finite_n_inputs(TANH, make_target(["tanh", "he3n"]), 1000)
    degree = "hermite(0, 1" + ", 0" * (MAX_TARGET_DEGREE - 1) + ", 1)"     # Hermite degree MAX_TARGET_DEGREE + 1
    with pytest.raises(ValueError, match=f"^target must have Hermite degree <= {MAX_TARGET_DEGREE}"):
        check_finite_n_inputs(TANH, make_target(degree), 1000)
    check_finite_n_inputs(TANH, make_target("hermite(0, 1" + ", 0" * (MAX_TARGET_DEGREE - 2) + ", 1)"), 1000)
