"""The two-layer model, its gradient steps and the one- and two-step simulations.

Private: import from ``rmtfl.numerics``."""
