"""Gradient flow from small initialisation (docs/theory/gradient_flow.md).

Private: import from ``rmtfl.theory``."""
