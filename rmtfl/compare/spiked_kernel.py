"""Verify checks of the spiked-kernel part (filled in by that part's issue)."""
from __future__ import annotations

__all__ = ["checks"]


def checks(ctx):
    """The list of :class:`~rmtfl.compare.verify.Check` of this part."""
    return []
