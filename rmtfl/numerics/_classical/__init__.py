"""Sampled matrices, spectra and certified top-k solvers.

Private: import from ``rmtfl.numerics``."""
