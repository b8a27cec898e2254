"""Property-based bad-input tests of every public function of ``rmtfl.theory`` and ``rmtfl.numerics``.

One test per public function (parametrised): hypothesis draws a parameter of the function's valid
base call (``benchmarks/fuzz_api.py``) and a bad value for it from the strategy of the
parameter's kind (size, ratio, exponent, probability, activation, target, matrix, ...).  The call
runs in a forked worker (10 s limit, 4 GiB address-space cap) and must give a clean result or a
``ValueError``/``TypeError`` naming the parameter; never a hang, a MemoryError, another
exception type, or NaN/inf out of finite input; a value that must be refused (NaN, wrong type,
negative size, unknown name, ...) must be refused.  Elementwise laws may map NaN to NaN
(docs/reliability.md).

The default profile draws few examples of small sizes per function (the whole file runs in
well under a minute on 2 cores); ``-m slow`` runs the longer profile.  The full sweep with every
bad value of every parameter is ``python -m benchmarks.fuzz_api``.
"""
from __future__ import annotations

import math
import os
import sys

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks import fuzz_api as F  # noqa: E402

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

FUNCS = F.public_functions()
BASES = F.base_calls()
PARAMS = {q: F._param_list(FUNCS[q], *BASES[q]) for q in BASES}

#: Functions whose base call takes more than ~1 s: only in the slow profile.
HEAVY = {"theory.finite_n_outlier_map", "theory.two_step_finite_n", "theory.two_step_bulk_edge", "theory.first_saddle",
         "theory.ncf_kkt", "theory.limiting_path", "numerics.empirical_phase_diagram",
         "numerics.generalisation_experiment", "numerics.two_step_semi_analytic",
         "theory.phase_diagram", "theory.tracy_widom_mean"}

#: Functions that still have failing bad calls in the last full run of ``python -m benchmarks.fuzz_api``
#: (docs/reliability.md, "What remains"): run only in the slow profile, as expected failures
#: (non-strict), until their modules validate every parameter.  Remove a name once its module is
#: fixed; the fast test then guards it.
KNOWN_GAPS: set = set()

NAN, INF = float("nan"), float("inf")

# ------------------------------------------------------------------ strategies per parameter kind
_text = st.text(alphabet="abcxyz_", min_size=1, max_size=6).map(lambda s: "zz_" + s)
_wrong_type = st.one_of(_text, st.just(None), st.complex_numbers(min_magnitude=1, max_magnitude=2,
                                                                allow_nan=False, allow_infinity=False))


def _bad(label, value, must=True, finite=True):
    return F.Bad(label, value, must, finite)


SIZE = st.one_of(
    st.integers(-(10**15), 0).map(lambda v: _bad("nonpositive", v)),
    st.integers(10**10, 10**15).map(lambda v: _bad("huge", v, must=False)),
    st.floats(0.1, 100).filter(lambda v: v != int(v)).map(lambda v: _bad("float", v)),
    st.just(_bad("nan", NAN, finite=False)),
    _text.map(lambda v: _bad("str", v)),
)
INDEX = st.one_of(
    st.integers(-(10**15), -1).map(lambda v: _bad("negative", v)),
    st.integers(10**10, 10**15).map(lambda v: _bad("huge", v, must=False)),
    st.floats(0.1, 100).filter(lambda v: v != int(v)).map(lambda v: _bad("float", v)),
    _text.map(lambda v: _bad("str", v)),
)
REAL = st.one_of(
    st.sampled_from([NAN, INF, -INF]).map(lambda v: _bad("nonfinite", v, finite=False)),
    _wrong_type.filter(lambda v: v is not None).map(lambda v: _bad("type", v)),
    st.floats(1e250, 1e308).map(lambda v: _bad("huge", v, must=False)),
)
RATIO = st.one_of(REAL, st.floats(-1e300, 0.0).map(lambda v: _bad("nonpositive", v)))
NONNEG = st.one_of(REAL, st.floats(-1e300, -1e-300).map(lambda v: _bad("negative", v)))
EXPONENT = st.one_of(
    st.floats(0.5, 1e6).map(lambda v: _bad(">=1/2", v)),
    st.floats(-1e6, -1e-9).map(lambda v: _bad("negative", v)),
    st.just(_bad("nan", NAN, finite=False)),
)
PROBABILITY = st.one_of(
    st.floats(1.0 + 1e-9, 1e6).map(lambda v: _bad(">1", v)),
    st.floats(-1e6, -1e-9).map(lambda v: _bad("<0", v)),
    _text.map(lambda v: _bad("str", v)),
)
NAME = st.one_of(_text.map(lambda v: _bad("unknown", v)), st.integers(-5, 5).map(lambda v: _bad("int", v)))
ACTIVATION = NAME
TARGET = st.one_of(NAME, st.just(_bad("nan_coeffs", [0.0, NAN], finite=False)))


def MATRIX(base):
    a = np.asarray(base, dtype=float)

    def poke(v, label, finite):
        b = a.copy()
        if b.size:
            b.flat[0] = v
        return _bad(label, b, finite=finite)

    return st.one_of(
        st.sampled_from([NAN, INF, -INF]).map(lambda v: poke(v, "nonfinite entry", False)),
        st.just(_bad("complex", a + 1j)),
        st.just(_bad("empty", np.zeros((0,) * max(a.ndim, 1)))),
        st.just(_bad("wrong ndim", a[..., 0] if a.ndim >= 2 else a[None, None])),
        _text.map(lambda v: _bad("str", v)),
        st.floats(1e100, 1e200).map(lambda v: _bad("scale", a * v + (a == 0) * v, must=False)),
    )


def strategy_for(func, pname, base, default):
    """The hypothesis strategy of bad values for one parameter (``None``: not fuzzed)."""
    kind = F.param_kind(func, pname, base)
    nan_ok = (func, pname) in F.ELEMENTWISE
    fixed = {"size": SIZE, "index": INDEX, "positive": RATIO, "nonneg": NONNEG, "real": REAL, "exponent": EXPONENT,
             "probability": PROBABILITY, "activation": ACTIVATION, "target": TARGET, "choice": NAME, "backend": NAME,
             "object": NAME, "callable": NAME}
    if kind in fixed:
        s = fixed[kind]
    elif kind == "rng":
        s = _text.map(lambda v: _bad("str", v))
    elif kind == "array":
        s = MATRIX(base)
    else:
        return None
    if nan_ok and kind == "array":  # elementwise over an array: NaN/inf entries map through (as the harness)
        s = s.map(lambda b: F.Bad(b.label, b.value, b.must and b.finite and b.label != "empty", b.finite))
    elif nan_ok:  # NaN in, NaN out is allowed (docs/reliability.md §2); inf must still be refused
        s = s.map(lambda b: F.Bad(b.label, b.value, b.must and not _is_nan(b.value), b.finite))
    return s.map(lambda b: F.allowed(func, pname, b))


def _is_nan(v):
    if isinstance(v, float):
        return math.isnan(v)
    return isinstance(v, np.ndarray) and v.dtype.kind == "f" and bool(np.isnan(v).any())


def _cases(qual):
    name = qual.split(".", 1)[1]
    out = []
    for pname, base, default in PARAMS[qual]:
        s = strategy_for(name, pname, base, default)
        if s is not None:
            out.append(st.tuples(st.just(pname), s))
    return st.one_of(*out) if out else None


def _check(qual, pname, bad):
    fn = FUNCS[qual]
    args, kwargs = BASES[qual]
    a, k = F._substitute(fn, args, kwargs, pname, bad.value)
    out = F.run_call(fn, a, k, timeout=F.TIMEOUT)
    cls = F.classify(out, pname, bad, base_finite=BASE_FINITE.get(qual, True))
    assert cls not in F.FAIL, (
        f"{qual}({pname}={bad.label}: {bad.value!r:.60}) -> {cls}: {out.exc_type} {out.message[:200]} "
        f"{out.summary[:100]}")


BASE_FINITE: dict = {}


def _base_finite(qual):
    if qual not in BASE_FINITE:
        fn = FUNCS[qual]
        args, kwargs = BASES[qual]
        out = F.run_call(fn, args, kwargs, timeout=60)
        assert out.status == "ok", f"base call of {qual} failed: {out.exc_type} {out.message}"
        BASE_FINITE[qual] = out.finite
    return BASE_FINITE[qual]


def _params(heavy: bool, gaps: bool = True):
    out = []
    for q in sorted(BASES):
        if _cases(q) is None or (q in HEAVY) != heavy or (q in KNOWN_GAPS and not gaps):
            continue
        marks = [pytest.mark.xfail(reason="known validation gap (docs/reliability.md)", strict=False)] \
            if q in KNOWN_GAPS else []
        out.append(pytest.param(q, marks=marks, id=q))
    return out


FAST = settings(max_examples=3, deadline=None, database=None, derandomize=True,
                phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
SLOW = settings(max_examples=40, deadline=None, database=None, derandomize=True,
                suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize("qual", _params(heavy=False, gaps=False))
def test_bad_input_refused_cleanly(qual):
    _base_finite(qual)

    @FAST
    @given(_cases(qual))
    def run(case):
        _check(qual, *case)

    run()


@pytest.mark.slow
@pytest.mark.parametrize("qual", _params(heavy=False) + _params(heavy=True))
def test_bad_input_refused_cleanly_long(qual):
    _base_finite(qual)

    @SLOW
    @given(_cases(qual))
    def run(case):
        _check(qual, *case)

    run()


def test_every_public_function_has_a_base_call():
    missing = sorted(q for q in FUNCS if q not in BASES)
    assert not missing, f"add a valid call to benchmarks/fuzz_api.py base_calls(): {missing}"


def test_classifier():
    ok = F.Outcome("error", "ValueError", "psi must be > 0", summary="ValueError,Exception,BaseException")
    assert F.classify(ok, "psi", _bad("neg", -1.0)) == "named"
    assert F.classify(ok, "var", _bad("neg", -1.0)) == "unnamed"
    assert F.classify(F.Outcome("error", "IndexError", "x", summary="IndexError,LookupError,Exception,"
                                "BaseException"), "k", _bad("neg", -1)) == "obscure"
    assert F.classify(F.Outcome("hang"), "k", None) == "hang"
    assert F.classify(F.Outcome("ok", finite=False), "k", _bad("huge", 10**12, must=False)) == "nonfinite"
    assert F.classify(F.Outcome("ok", finite=True), "k", _bad("neg", -1)) == "accepted"
    assert F.classify(F.Outcome("ok", finite=False), "lam", _bad("nan", NAN, False, False)) == "passthrough"


@pytest.mark.parametrize("message, pname, named", [
    ("N must be an integer width in [2, 1e+09], got 1", "N", True),
    ("The function value at x=4.0 is NaN; solver cannot continue.", "N", False),    # "NaN" is not N
    ("degree must be <= 4", "d", False),                                             # nor "degree" d
    ("d must be >= 2, got 1", "d", True),
    ("top_k must be a positive integer", "top_k", True),
    ("|eta1| must be <= 1e6", "eta1", True),
    ("activation must be a name or an Activation", "spec", True),                   # an alias
])
def test_a_parameter_is_named_as_a_word(message, pname, named):
    assert F.names_param(message, pname) is named


def test_run_call_limits():
    import time

    out = F.run_call(time.sleep, (30,), timeout=0.5)
    assert out.status == "hang"
    out = F.run_call(np.ones, ((2**40,),), timeout=10)
    assert out.exc_type == "MemoryError" or out.status == "killed"
    assert F.run_call(math.sqrt, (4.0,)).status == "ok"
