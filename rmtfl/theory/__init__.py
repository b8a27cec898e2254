"""Analytic predictions (scipy for speed, mpmath for precision; never a random number)."""
from .activations import Activation, get_activation, hermite_polynomial, known_activations
from .hermite import (
    dual_activation,
    gaussian_moment,
    hermite_coeff,
    hermite_coeff_normalised,
    hermite_coeffs,
    hermite_he,
    information_exponent,
    nonlinear_norm,
    stein_moment,
)

__all__ = [
    "Activation", "get_activation", "hermite_polynomial", "known_activations",
    "dual_activation", "gaussian_moment", "hermite_coeff", "hermite_coeff_normalised",
    "hermite_coeffs", "hermite_he", "information_exponent", "nonlinear_norm", "stein_moment",
]
