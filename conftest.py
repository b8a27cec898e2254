"""Repository-wide pytest configuration (tests and the doctests under rmtfl/)."""
import sys

import pytest


@pytest.fixture(autouse=True)
def _close_figures():
    """Figures made by a test or a doctest are closed after it, so none piles up across the suite."""
    yield
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close("all")
