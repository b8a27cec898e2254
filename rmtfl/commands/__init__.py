"""Subcommands of the ``rmtfl`` CLI, one module per part; each has ``register(groups, top)``."""
