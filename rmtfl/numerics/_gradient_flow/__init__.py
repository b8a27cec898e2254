"""The gradient flow from small initialisation and its measurements.

Private: import from ``rmtfl.numerics``."""
