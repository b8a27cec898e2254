"""Sampling and measurement on arrays (numpy by default, cupy on request)."""
from .backend import Backend, BackendUnavailable, get_backend, to_numpy

__all__ = ["Backend", "BackendUnavailable", "get_backend", "to_numpy"]
