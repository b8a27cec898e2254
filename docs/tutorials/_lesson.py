"""Shared set-up of the lessons: output folder, size switch, non-interactive plotting."""
import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

SMALL = os.environ.get("RMTFL_TUTORIAL_SMALL") == "1"
OUT = Path(os.environ.get("RMTFL_TUTORIAL_OUT", "tutorial-out"))
OUT.mkdir(parents=True, exist_ok=True)


def size(small, large):
    """``small`` under the test suite, ``large`` otherwise."""
    return small if SMALL else large


def row(name, predicted, measured):
    """Print one 'prediction beside measurement' line."""
    print(f"{name:<40} predicted {predicted:>10.5f}   measured {measured:>10.5f}")
