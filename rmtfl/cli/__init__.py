"""The ``rmtfl`` command line (``rmtfl --help``; also ``python -m rmtfl``)."""
from __future__ import annotations

from ._main import build_parser, main

__all__ = ["build_parser", "main"]
