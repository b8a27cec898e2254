"""rmtfl: random-matrix theory of feature learning.

``rmtfl.theory`` predicts, ``rmtfl.numerics`` samples and measures, and
``rmtfl.compare`` puts the two side by side.  Importing rmtfl never imports cupy.
"""
from . import compare, numerics, theory
from .compare import analyze
from ._version import __version__

__all__ = ["theory", "numerics", "compare", "analyze", "__version__"]
