"""The finite-N widened bulk at vanishing steps, a Marchenko-Pastur profile: the reference bulk of the column and
coupling tests (docs/theory/two_step.md §8.3)."""
from __future__ import annotations

import numpy as np

from rmtfl.theory import get_activation, make_target
from rmtfl.theory._two_step import finite_n as F


def mp_bulk(N, psi=1.0):
    """The finite-N bulk at vanishing steps: a Marchenko-Pastur profile (edge ``1 + sqrt(psi)``)."""
    A, T = get_activation("tanh"), make_target("linear")
    st = F.finite_n_setup(A, T, phi=2.0, batch="reused", phi2=None)
    _, _, _, tn, g, wg, rows, _ = F.finite_n_grams(A, st, eta1=1e-9, eta2=1e-9, N=N, bulk=True)
    o = np.argsort(tn)
    return F.WidenedBulk(st, T, eta1=1e-9, eta2=1e-9, N=N, psi=psi, tn=tn[o], rows=tuple(r[o] for r in rows),
                         second_layer="gaussian")
