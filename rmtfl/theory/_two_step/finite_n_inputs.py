"""Which inputs the finite-``N`` two-step route takes (docs/theory/two_step.md §8.2): relu or a smooth sigma with known
derivatives, a single-direction target of Hermite degree at most
:data:`~rmtfl.theory._two_step.finite_n.MAX_TARGET_DEGREE`, an integer width; and how far in ``t_j = eta_1 a_j`` its
result was checked (:data:`T_MAX_CHECKED`).

>>> from rmtfl.theory._classical.activations import get_activation
>>> takes_activation(get_activation("tanh")), takes_activation(get_activation("relu"))
(True, True)
"""
from __future__ import annotations

import numpy as np

from .._classical.activation_type import Activation
from .._classical.targets import Target
from .finite_n import MAX_TARGET_DEGREE
from .relu_moments import is_relu

__all__ = ["takes_activation", "check_finite_n_inputs", "T_MAX_CHECKED"]

#: ``eta_1 max_j |a_j|`` beyond which the finite-N route is flagged unreliable (largest value checked).
T_MAX_CHECKED = 3.0


def takes_activation(act: Activation) -> bool:
    """Whether the finite-``N`` route handles ``act``: relu (closed forms) or smooth with known derivatives."""
    return (act.smooth and act.deriv is not None) or is_relu(act)


def check_finite_n_inputs(act: Activation, target: Target, N, max_width: int = 10**9):
    """Bad-input errors of the finite-``N`` route (each names its parameter)."""
    if isinstance(N, bool) or not isinstance(N, (int, float, np.integer, np.floating)) or not 2 <= N <= max_width \
            or N != int(N):
        raise ValueError(f"N must be an integer width in [2, {max_width:.0e}], got {N!r}")
    if not takes_activation(act):
        raise ValueError(f"activation must be relu or smooth with known derivatives for the finite-N route (sigma'' "
                         f"enters the widened bulk), got {act.name!r}")
    if target.rank != 1:
        raise ValueError(f"target must be single-index (rank 1) for the finite-N route, got rank {target.rank}")
    deg = target.links[0].degree
    if deg is not None and deg > MAX_TARGET_DEGREE:
        raise ValueError(f"target must have Hermite degree <= {MAX_TARGET_DEGREE} for the finite-N quadrature, "
                         f"got degree {deg}")
