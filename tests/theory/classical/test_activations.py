"""Activation registry: values, derivatives against finite differences, structure flags.

References: closed-form derivatives (e.g. tanh' = 1 - tanh^2) and central
differences with step 1e-5 (error ~1e-10 for these smooth functions).
"""
import math

import numpy as np
import pytest

from rmtfl.theory._classical.activations import from_callable, get_activation, hermite_polynomial, known_activations

SMOOTH = ["tanh", "erf", "sigmoid", "softplus", "gelu", "he3", "hermite(0.5,1,0.5,0.2)"]


@pytest.mark.parametrize("name", SMOOTH)
@pytest.mark.parametrize("k", [1, 2, 3])
def test_derivatives_match_finite_differences(name, k):
    act = get_activation(name)
    z = np.linspace(-2.5, 2.5, 11)
    h = 1e-4
    fd = (act.derivative(k - 1, z + h) - act.derivative(k - 1, z - h)) / (2 * h)
    np.testing.assert_allclose(act.derivative(k, z), fd, atol=5e-7, rtol=1e-7)


@pytest.mark.parametrize("k", [2, 3, 4, 6])
def test_gelu_higher_derivatives_match_mpmath(k):
    """(z Phi)^(k) = (-1)^k phi (He_{k-2} - He_k) against mpmath's numerical derivative at 30 digits."""
    import mpmath as mp

    z = np.linspace(-6.0, 6.0, 9)
    with mp.workdps(30):
        ref = [float(mp.diff(lambda t: t * mp.ncdf(t), mp.mpf(float(v)), k)) for v in z]
    np.testing.assert_allclose(get_activation("gelu").derivative(k, z), ref, rtol=1e-12, atol=1e-15)


def test_values_and_flags():
    assert get_activation("relu^2").homogeneity == 2.0
    assert get_activation("relu").homogeneity == 1.0
    assert get_activation("step").homogeneity == 0.0
    assert get_activation("square").degree == 2 and get_activation("square").homogeneity == 2.0
    assert get_activation("identity").parity == -1
    assert get_activation("he2").parity == 1
    assert get_activation("tanh").homogeneity is None
    he3n = get_activation("he3n")
    assert float(he3n(2.0)) == pytest.approx(2.0 / math.sqrt(6))
    assert float(get_activation("relu^3")(2.0)) == 8.0
    np.testing.assert_array_equal(get_activation("step")(np.array([-1.0, 0.0, 1.0])), [0.0, 0.0, 1.0])


def test_polynomial_coefficients_convention():
    # sum_k a_k He_k with a = (0, 1, 0.5): mu_2 = 2! * 0.5 = 1
    f = hermite_polynomial([0, 1, 0.5])
    assert f.hermite_exact(2) == 1.0 and f.degree == 2
    assert get_activation("hermite(0, 1, 0.5)").herme == (0.0, 1.0, 0.5)


def test_callables_and_errors():
    f = from_callable(np.sin, derivatives=[np.cos])
    assert float(f.derivative(1, 0.0)) == 1.0
    with pytest.raises(ValueError, match="order 2"):
        f.derivative(2, 0.0)
    with pytest.raises(ValueError, match="no known derivatives"):
        get_activation(np.cos).derivative(1, 0.0)
    with pytest.raises(ValueError, match="unknown activation"):
        get_activation("swish")
    with pytest.raises(ValueError, match="name, a callable"):
        get_activation(3.0)
    assert "relu" in known_activations()


@pytest.mark.parametrize("name", SMOOTH)
@pytest.mark.parametrize("shape", [(7,), (3, 5000), (2, 3, 4000)])
def test_in_pieces_is_the_function_itself(name, shape):
    """The theory's piecewise evaluation gives the very values of one call (bit for bit), for one derivative and a
    list of them, whatever the shape and however the pieces fall."""
    from rmtfl.theory._classical.activations import in_pieces

    act = get_activation(name)
    z = np.random.default_rng(3).normal(size=shape) * 2.0
    np.testing.assert_array_equal(in_pieces(lambda u: act.derivative(1, u), z, piece=1000), act.derivative(1, z))
    many = in_pieces(lambda u: act.derivatives((1, 2), u), z, piece=999)
    for got, want in zip(many, act.derivatives((1, 2), z), strict=True):
        assert got.shape == z.shape
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["gelu", "erf"])
def test_gaussian_smoothed_derivatives_are_the_gaussian_expectations(name):
    """``E f^(k)(a + b xi)``, ``xi ~ N(0, 1)``, in closed form (gelu: ``Phi`` and Gaussian products; erf:
    ``exp(-x^2)``) against a 200-node Gauss–Hermite rule over ``xi``, ``a`` and ``b`` as arrays (broadcast)."""
    act = get_activation(name)
    a = np.linspace(-4.0, 4.0, 9)[:, None]
    b = np.array([0.0, 0.3, 1.0, 2.0])[None, :]
    x, w = np.polynomial.hermite_e.hermegauss(200)
    w = w / w.sum()
    got = act.gaussian_smoothed((1, 2), a, b)
    for k, g in zip((1, 2), got):
        ref = np.einsum("abx,x->ab", act.derivative(k, a[..., None] + b[..., None] * x), w)
        np.testing.assert_allclose(g, ref, atol=1e-13)


def test_gaussian_smoothed_is_none_without_a_closed_form():
    assert get_activation("tanh").gaussian_smoothed((1,), 0.0, 1.0) is None
    assert get_activation("gelu").gaussian_smoothed((3,), 0.0, 1.0) is None
