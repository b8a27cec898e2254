"""The spiked random-features kernel (docs/theory/spiked_kernel.md).

Private: import from ``rmtfl.theory``."""
