"""The first step's tables of sigma' on the data grid (docs/theory/two_step.md §8.2): where ``E sigma'(a + b xi)``
has a closed form (gelu, erf), ``F`` and ``dF/ds`` without the ``xi`` rule.

Reference: the Gauss–Hermite product rule over ``(z, xi)`` with 60 nodes in ``xi`` (exact to rounding for these smooth
integrands at the rows tested) and, with a reused batch, the table's own 20 nodes in ``z`` (the closed form replaces
the ``xi`` rule only).
"""
import math

import numpy as np
import pytest

from rmtfl.theory import get_activation, make_target
from rmtfl.theory._classical.hermite import gauss_hermite_rule
from rmtfl.theory._two_step.finite_n import F_table, finite_n_setup

H3 = "hermite(0, 1, 0, 0.4082482904638631)"


def _product_rule(A, st, tq, keep):
    """``(F, dF/ds)`` at row ``tq`` on the product rule (module docstring), with the table's calibration ``F(0) =
    mu_1`` (the ``z`` rule's own ``E sigma'(z)`` taken out)."""
    z, wz = gauss_hermite_rule(20 if st.batch == "reused" else 120)
    xi, wx = gauss_hermite_rule(60)
    D = st.mu1 * st.s[keep, None, None] + st.tau_h * xi[None, None, :]
    if st.batch == "reused":
        D = D + st.y[keep, None, None] * A.derivative(1, z)[None, :, None] / st.phi
    u = z[None, :, None] + tq * D
    W = np.outer(wz, wx)
    v, d2 = A.derivatives((1, 2), u)
    f0 = float(wz @ A.derivative(1, z))
    return np.einsum("iab,ab->i", v, W) - f0 + st.mu1, tq * st.mu1 * np.einsum("iab,ab->i", d2, W)


@pytest.mark.parametrize("act", ["gelu", "erf"])
@pytest.mark.parametrize("batch", ["reused", "fresh"])
def test_closed_form_tables_are_the_gaussian_expectations(act, batch):
    """``F_table(bulk=False)`` for gelu and erf at ``eta_1 = N^0.4``, ``N = 1000``, rows up to |g| = 4: within 1e-12 of
    the product rule (module docstring), where the 6-node ``xi`` rule of the quadrature route is 2.5e-5 off for gelu
    at |g| = 3 (measured)."""
    A, T = get_activation(act), make_target(H3)
    st = finite_n_setup(A, T, phi=2.0, batch=batch, phi2=2.0 if batch == "fresh" else None)
    t = 1000**0.4 * np.linspace(-4, 4, 9) / math.sqrt(1000)
    tab = F_table(A, st, t, bulk=False)
    assert tab.c is None and tab.sq is None
    keep = (st.w > 1e-8) & (np.abs(st.y) < 3)
    for q, tq in enumerate(t):
        F, ds = _product_rule(A, st, tq, keep)
        np.testing.assert_allclose(tab.F[q, keep], F, atol=1e-12)
        np.testing.assert_allclose(tab.ds[q, keep], ds, atol=1e-12)


@pytest.mark.parametrize("act", ["gelu", "erf"])
def test_closed_form_tables_agree_with_the_quadrature_route_at_small_steps(act):
    """At small first steps the 6-node ``xi`` rule is exact to rounding: the closed form and the quadrature route
    (``bulk=True``, the same ``F``) agree to 1e-12 there, and part at larger ones (the rule's error, not the form's)."""
    A, T = get_activation(act), make_target(H3)
    st = finite_n_setup(A, T, phi=2.0, batch="reused", phi2=None)
    keep = st.w > 1e-8
    small = F_table(A, st, np.array([0.05, -0.1]), bulk=False).F[:, keep]
    quad = F_table(A, st, np.array([0.05, -0.1]), bulk=True).F[:, keep]
    np.testing.assert_allclose(small, quad, atol=1e-12)
    big = np.array([1.5])
    assert np.abs(F_table(A, st, big, bulk=False).F - F_table(A, st, big, bulk=True).F)[:, keep].max() > 1e-7
