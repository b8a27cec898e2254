"""benchmarks/probe_two_step.py: random legal inputs to two_step with a width (docs/reliability.md §4)."""
from __future__ import annotations

import random

import pytest

from benchmarks import probe_two_step as probe


@pytest.mark.parametrize("message, named", [
    ("N must be an integer width in [2, 1e+09], got 1", True),
    ("phi2 must be in (0, 1e4], got 0.0", True),
    ("eta1 and eta2 must be finite", True),
    ("The function value at x=4.0000004 is NaN; solver cannot continue.", False),   # a root finder's, not ours
    ("math domain error", False),
])
def test_a_value_error_counts_only_when_it_names_a_parameter(message, named):
    assert bool(probe.NAMED.search(message)) is named


def test_a_linear_sigma_with_a_reused_batch_is_answered():
    """Once a NaN in the second step's move ended in a root finder's error, which the probe took for a named one
    (the "N" of "NaN")."""
    t, outcome = probe.probe("identity", "he2", dict(psi=1.0, phi=2.0, eta1=10.0, eta2=10.0, N=300,
                                                     batch="reused", noise=0.0), limit=60)
    assert outcome == "ok"


def test_the_grouped_option_is_answered():
    """The same probe with the batch's most extreme samples as one group (docs/theory/two_step.md §8.3): a heavy
    single-sample point of the quadratic sigma, and a tiny width whose batch keeps its samples in the bulk."""
    for act, tgt, kw in (("hermite(0, 1, 0.5)", "hermite(0, 0, 0, 0, 1)", dict(N=300, eta1=10.0, eta2=10.0)),
                         ("tanh", "he2", dict(N=3, eta1=1.0, eta2=1.0))):
        t, outcome = probe.probe(act, tgt, dict(psi=1.0, phi=2.0, batch="reused", noise=0.0,
                                                extreme_samples="grouped", **kw), limit=60)
        assert outcome == "ok"


def test_draws_repeat_with_the_seed_and_cover_the_activations():
    a = [probe.draw(random.Random(3)) for _ in range(2)]
    assert a[0] == a[1]
    rng = random.Random(1)
    assert {probe.draw(rng)[0] for _ in range(400)} == set(probe.ACTIVATIONS)
