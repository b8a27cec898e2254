"""Kernel Gram matrices and one-step spiked features.

Private: import from ``rmtfl.numerics``."""
