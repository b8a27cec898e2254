"""CLI subcommands of the flow part."""
from __future__ import annotations


def register(groups, top) -> None:
    """Add this part's subcommands to groups['theory'], groups['simulate'] or top."""
