"""The defaults shared by every entry point (Python API examples, the CLI, sweeps and figures).

One place, so that ``rmtfl theory ...``, ``rmtfl simulate ...``, ``rmtfl sweep ...`` and the figures all
start from the same model unless told otherwise (docs/api.md).
"""
ACTIVATION = "gelu"                 #: default activation sigma: smooth, non-polynomial, no parity (every Hermite coefficient non-zero)
TARGET = "hermite(0, 1, 0.5)"      #: default single-index link: He1 + He2/2 (docs/conventions.md §3)
PSI = 1.0                           #: N/d
PHI = 2.0                           #: n/d
SEED = 0                            #: root seed of the CLI
BACKEND = "numpy"                   #: array backend

__all__ = ["ACTIVATION", "TARGET", "PSI", "PHI", "SEED", "BACKEND"]
