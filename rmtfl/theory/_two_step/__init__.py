"""One and two large gradient steps (docs/theory/two_step.md).

Private: import from ``rmtfl.theory``."""
