"""benchmarks/diag_single_column.py: a single sample's column batch by batch, and the law's order statistics built
from it (docs/theory/two_step_attempts.md §26)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.diag_single_column import (HE2, batch_value, bulk_ranks, column_location, ladder, law_first_rank,
                                           point_model)


@pytest.fixture(scope="module")
def gelu_point():
    """gelu, He1 + He2/2, (0.1, 0.4), N = 1000: where the count misses the draws' median by one."""
    return point_model("gelu", HE2, N=1000, eta1=1000 ** 0.1, eta2=1000 ** 0.4)


def test_the_column_location_is_the_fold_below_threshold_and_grows_beyond(gelu_point):
    """A sample inside the bulk's cut sits at the fold; beyond the threshold its column rises with ``z*``, and the
    coupling to ``P`` (one spike far above) lifts it here (measured: 2.0819 -> 2.1090 at z* = 3.60)."""
    m = gelu_point
    link = m.target.links[0]
    assert column_location(m, float(link(np.array([2.0]))[0]), 2.0) == pytest.approx(m.bulk.edge)
    zs = [3.4, 3.8, 4.2]
    locs = [column_location(m, float(link(np.array([z]))[0]), z) for z in zs]
    assert m.bulk.edge < locs[0] < locs[1] < locs[2]
    coupled = column_location(m, float(link(np.array([3.8]))[0]), 3.8, couple=True)
    assert coupled > locs[1]


def test_the_law_of_the_top_single_sample_is_its_columns_over_the_largest_sample(gelu_point):
    """The prediction's first single-sample rank against the same law built here from each column's location at the
    largest ``z*`` of n (``Phi(t)^n``, no spread of the strength): the two agree in mean and median, uncoupled and
    coupled (measured: within 0.05 % and 0.1 %), so the law's order statistics add nothing of their own."""
    for couple in (False, True):
        lad = ladder(gelu_point, couple=couple)
        mean, median = law_first_rank(gelu_point, couple=couple)
        assert lad["mean"] == pytest.approx(mean, rel=3e-3)
        assert lad["median"] == pytest.approx(median, rel=3e-3)


def test_a_planted_sample_is_found_on_its_column():
    """One sample planted at z* = 4.0 in a small batch, every other |z*| below 2.9: a singular value of W_2 leans on
    it, its y is the link's at 4.0, and M's eigenvalue along it exceeds y / phi (the rest of M adds to it)."""
    N = 120
    v, y, z, lam = batch_value("gelu", HE2, N=N, eta1=N ** 0.2, eta2=N ** 0.4, seed=3, planted=4.0)
    assert z == 4.0 and y == pytest.approx(4.0 + (16.0 - 1.0) / 2)
    assert math.isfinite(v) and v > 0
    assert lam > y / 2.0


def test_the_left_out_columns_raise_the_bulk_below_the_outliers():
    """Attempt 15's bulk (d - K columns and the left-out columns' spectral shift) against the prediction's: the same
    outliers above, and below them values no lower at any rank (the shift only adds eigenvalues)."""
    N = 400
    m = point_model("gelu", HE2, N=N, eta1=N ** 0.4, eta2=N ** 0.4)
    ranks = bulk_ranks(m, 24)
    base, shifted = np.array(ranks["as is"]), np.array(ranks["attempt 15"])
    top = int(np.sum(base > m.bulk.edge))
    assert np.all(np.isfinite(base)) and np.all(np.isfinite(shifted))
    assert np.all(shifted[top + 2:] >= base[top + 2:] * (1 - 1e-3))
    assert np.all(np.diff(ranks["K = 0"]) <= 0)
