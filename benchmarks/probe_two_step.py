"""Random combinations of valid inputs to :func:`rmtfl.theory.two_step` with a width (docs/reliability.md §4).

The fuzz run (``benchmarks/fuzz_api.py``) replaces one parameter at a time; this probe draws every parameter at
once from wide but legal ranges (smooth and polynomial ``sigma``, targets up to Hermite degree 4, ``N`` from 2 to
3000, ``psi`` and ``phi`` from 0.1 to 8, steps from 0 to 100, both batch kinds, label noise) and reports every call
that raises anything but a ``ValueError`` naming a parameter, returns a non-finite value, or runs longer than
``--limit`` seconds::

    python -m benchmarks.probe_two_step --seed 1 --count 60      # about 2 minutes on 2 cores
    python -m benchmarks.probe_two_step --seed 1 --extreme-samples single     # docs/theory/two_step.md §8.3
"""
from __future__ import annotations

import argparse
import math
import random
import re
import signal
import sys
import time
import warnings

ACTIVATIONS = ["tanh", "gelu", "erf", "hermite(0, 1, 0.5)", "sigmoid", "softplus", "he3", "relu", "identity"]
TARGETS = ["linear", "he2", "hermite(0, 1, 0.5)", "tanh", "hermite(0, 0, 0, 0, 1)"]
NAMES = ("psi", "phi", "phi2", "eta1", "eta2", "N", "target", "activation", "noise", "batch", "extreme_samples")
#: A parameter's name as a word of the message: "N must be ..." names ``N``, "... is NaN" does not.
NAMED = re.compile(r"\b(" + "|".join(NAMES) + r")\b")


class _Late(Exception):
    pass


def _late(*_):
    raise _Late


def draw(rng: random.Random):
    """One random call: ``(activation, target, keyword arguments)``."""
    kw = dict(psi=rng.choice([0.1, 0.5, 1.0, 2.0, 5.0]), phi=rng.choice([0.2, 0.5, 1.0, 2.0, 8.0]),
              eta1=rng.choice([0.0, 1e-6, 1.0, 10.0, 100.0]), eta2=rng.choice([0.0, 1e-6, 1.0, 10.0, 100.0]),
              N=rng.choice([2, 3, 10, 50, 300, 1000, 3000]), batch=rng.choice(["reused", "fresh"]),
              noise=rng.choice([0.0, 0.5]))
    if kw["batch"] == "fresh":
        kw["phi2"] = rng.choice([0.3, 2.0])
    return rng.choice(ACTIVATIONS), rng.choice(TARGETS), kw


def probe(act, tgt, kw, limit):
    """``(seconds, outcome)``: ``"ok"``, ``"named"`` (a ValueError naming a parameter) or what went wrong."""
    from rmtfl.theory import two_step

    t0 = time.perf_counter()
    signal.signal(signal.SIGALRM, _late)
    signal.alarm(limit)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            p = two_step(act, tgt, **kw)
        values = [o.singular_value for o in p.outliers] + [p.bulk_edge]
        outcome = "ok" if all(math.isfinite(v) for v in values) else "nonfinite"
    except _Late:
        outcome = "slow"
    except ValueError as e:
        outcome = "named" if NAMED.search(str(e)) else f"unnamed: {e}"
    except Exception as e:                                    # noqa: BLE001 -- the probe reports it
        outcome = f"{type(e).__name__}: {e}"
    finally:
        signal.alarm(0)
    return time.perf_counter() - t0, outcome


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=60)
    ap.add_argument("--limit", type=int, default=20, help="seconds a call may take")
    ap.add_argument("--extreme-samples", default="auto", choices=("auto", "single", "grouped"),
                    help="how each call takes the batch's most extreme samples (docs/theory/two_step.md §8.3; "
                         "default auto, the prediction's default, which the draws then leave out)")
    a = ap.parse_args(argv)
    rng = random.Random(a.seed)
    bad, slowest = 0, 0.0
    for _ in range(a.count):
        act, tgt, kw = draw(rng)
        if a.extreme_samples != "auto":
            kw["extreme_samples"] = a.extreme_samples
        dt, outcome = probe(act, tgt, kw, a.limit)
        slowest = max(slowest, dt)
        if outcome not in ("ok", "named"):
            bad += 1
            print(f"{dt:6.2f} s  {act} {tgt} {kw}: {outcome[:200]}", flush=True)
    print(f"{a.count} calls, {bad} bad, slowest {slowest:.1f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
