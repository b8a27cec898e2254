"""Classical layer: activations and Hermite expansions, targets, Marchenko-Pastur, Tracy-Widom, BGN.

Private: import from ``rmtfl.theory``."""
