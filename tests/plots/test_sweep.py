"""rmtfl/plots/_sweep.py: the count maps of the phase diagram."""
from __future__ import annotations

import numpy as np
import pytest

mpl = pytest.importorskip("matplotlib")
mpl.use("Agg")

from rmtfl.plots import plot_count_map  # noqa: E402


def _texts(ax):
    return sorted(t.get_text() for t in ax.texts)


def test_count_map_marks_uncertain_and_unreliable_cells():
    """Hatched cells where the count varies between batches; a "?" where the prediction marks itself unreliable,
    after the value when the cells are annotated."""
    import matplotlib.pyplot as plt

    V = np.array([[0.0, 1.0], [2.0, 3.0]])
    shaky = np.array([[False, True], [False, False]])
    fig, ax = plt.subplots()
    out = plot_count_map([0.1, 0.2], [0.3, 0.4], V, ax=ax, annotate=True, uncertain=~shaky, unreliable=shaky)
    assert out is ax and _texts(ax) == ["0", "1?", "2", "3"]
    assert len(ax.patches) == 3                                         # the three hatched cells
    ax2 = plot_count_map([0.1, 0.2], [0.3, 0.4], V, unreliable=shaky)
    assert _texts(ax2) == ["?"]
    with pytest.raises(ValueError, match="unreliable must have the shape of values"):
        plot_count_map([0.1, 0.2], [0.3, 0.4], V, unreliable=np.ones(3, bool))
    plt.close("all")
