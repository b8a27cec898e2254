"""A strict stand-in for cupy on the CPU (used by ``test_cupy_branches_on_cpu.py``; see its docstring).

``fake_cupy_installed()`` puts a fake ``cupy``/``cupyx.scipy.special`` into ``sys.modules``
so that the real ``get_backend("cupy")`` route runs; ``VERIFIED_CUPY_API`` lists the cupy names
checked to exist in cupy's sources.
"""
from __future__ import annotations

import contextlib
import sys
import types

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

# ----------------------------------------------------------------------------------- the fake
#: cupy names (prefix ``cupy.``, ``cupy.linalg.``, ``ufunc:`` = a numpy ufunc dispatched to
#: ``cupy.<name>``, ``special:`` = a scipy.special ufunc dispatched to ``cupyx.scipy.special``,
#: ``ndarray.`` = an array method) that exist in cupy (checked in its sources).
_TOP = """add subtract multiply divide true_divide floor_divide power negative absolute abs sqrt
square exp log log1p expm1 logaddexp tanh sin cos arcsin arccos arctan arctan2 maximum minimum clip sign
isfinite isnan isinf greater greater_equal less less_equal equal not_equal logical_and logical_or
logical_not where einsum outer matmul dot mean sum std var zeros zeros_like ones ones_like empty
empty_like full eye arange asarray array ascontiguousarray asanyarray asfortranarray copyto
fill_diagonal float64 float32 int64 int32 bool_ dtype newaxis pi inf nan concatenate stack column_stack
count_nonzero argsort sort diag trace reshape ravel transpose max min amax amin all any cumsum prod
linspace tril triu conj real imag around floor ceil reciprocal hypot cosh sinh log2 log10 exp2""".split()
_LINALG = "eigh eigvalsh svd solve norm qr cholesky inv det slogdet lstsq pinv".split()
_METHODS = """astype copy reshape ravel flatten transpose swapaxes squeeze sum mean std var max min argmax
argmin argsort sort all any dot clip fill conj conjugate cumsum prod round nonzero diagonal trace take
repeat view get item tolist""".split()
#: cupyx.scipy.special ufuncs (its ``__init__.py``); scipy.special ufuncs outside it (eval_hermite, ...) are
#: NotImplemented for cupy arrays, i.e. a TypeError on a GPU, and so in the fake
_SPECIAL = """erf erfc erfcx erfinv erfcinv ndtr log_ndtr ndtri logit expit log_expit gamma gammaln digamma psi
polygamma i0 i1 xlogy xlog1py expm1 log1p exp2 exp10 cbrt entr rel_entr kl_div zeta""".split()
VERIFIED_CUPY_API = frozenset(
    [f"cupy.{n}" for n in _TOP] + [f"ufunc:{n}" for n in _TOP] + [f"cupy.linalg.{n}" for n in _LINALG]
    + [f"ndarray.{n}" for n in _METHODS] + [f"special:{n}" for n in _SPECIAL]
    + [f"cupyx.scipy.special.{n}" for n in _SPECIAL]
    + ["cupy.random.default_rng", "Generator.standard_normal", "Generator.random",
       "cupy.cuda.Stream.null.synchronize", "cupy.cuda.runtime.getDeviceCount", "cupy.asnumpy",
       "cupy.get_array_module"])

_PY_SCALARS = (bool, int, float, complex)
_COMPARISONS = {"greater", "greater_equal", "less", "less_equal", "equal", "not_equal"}
_TRANSFER = ("asarray", "array", "asanyarray", "ascontiguousarray", "asfortranarray")


class _Log:
    """What the code did with the fake: cupy names used, transfers, generators, syncs."""

    def __init__(self):
        self.names: set[str] = set()
        self.h2d = self.d2h = self.generators = self.draws = self.syncs = 0


_LOG: _Log | None = None  # the log of the installed fake (arrays outliving it log nothing)


def _note(name: str) -> None:
    if _LOG is not None:
        _LOG.names.add(name)


def _host_error(where: str) -> TypeError:
    return TypeError(f"fake cupy: a numpy.ndarray reached {where} (cupy raises TypeError 'Unsupported type "
                     f"<class numpy.ndarray>'): move host data to the device with backend.asarray first")


def _wrap(obj):
    """numpy results -> device arrays (scalars become 0-d arrays, as cupy returns them)."""
    if isinstance(obj, np.ndarray):
        return FakeDeviceArray(obj)
    if isinstance(obj, np.generic):
        return FakeDeviceArray(np.asarray(obj))
    if isinstance(obj, tuple):
        return tuple(_wrap(o) for o in obj)
    if isinstance(obj, list):
        return [_wrap(o) for o in obj]
    return obj


def _unwrap(obj, where: str, strict: bool = True):
    """Device arrays -> their numpy storage; a numpy array raises (``strict``) as in cupy."""
    if isinstance(obj, FakeDeviceArray):
        return obj._a
    if isinstance(obj, np.ndarray):
        if strict:
            raise _host_error(where)
        return obj
    if isinstance(obj, (list, tuple)):
        items = [_unwrap(o, where, strict) for o in obj]
        return items if isinstance(obj, list) else tuple(items)
    return obj


class FakeDeviceArray(NDArrayOperatorsMixin):
    """A cupy-like device array: numpy storage behind cupy's host/device rules."""

    __slots__ = ("_a",)
    __array_priority__ = 100
    __hash__ = None

    def __init__(self, a: np.ndarray):
        if type(a) is not np.ndarray:
            raise TypeError(f"fake cupy: storage must be a numpy.ndarray, got {type(a)}")
        self._a = a

    # attributes
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    nbytes = property(lambda self: self._a.nbytes)
    itemsize = property(lambda self: self._a.itemsize)
    strides = property(lambda self: self._a.strides)
    flags = property(lambda self: self._a.flags)
    T = property(lambda self: FakeDeviceArray(self._a.T))
    real = property(lambda self: FakeDeviceArray(self._a.real))
    imag = property(lambda self: FakeDeviceArray(self._a.imag))

    # host <-> device
    def get(self, stream=None, order="C", out=None):
        _note("ndarray.get")
        if _LOG is not None:
            _LOG.d2h += 1
        if out is not None:
            out[...] = self._a
            return out
        return np.array(self._a, order=order, copy=True)

    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct "
                        "a NumPy array explicitly. (fake cupy)")

    def item(self):
        _note("ndarray.item")
        return self._a.item()

    def tolist(self):
        _note("ndarray.tolist")
        return self._a.tolist()

    # numpy protocols, as cupy implements them
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__":
            return NotImplemented
        out = kwargs.get("out", ())
        operands = inputs + tuple(out)
        if ufunc is np.matmul:  # cupy's own __matmul__ / cupy.matmul: device operands only
            if not all(isinstance(x, FakeDeviceArray) for x in operands):
                raise _host_error("matmul (@)")
        elif ufunc.signature is not None:
            return NotImplemented
        for x in operands:
            if isinstance(x, (FakeDeviceArray, np.generic) + _PY_SCALARS):
                continue
            if isinstance(x, np.ndarray):
                if ufunc.__name__ in _COMPARISONS and x.ndim == 0 and not any(x is o for o in out):
                    continue  # cupy converts a 0-d host operand of a comparison to a scalar
                raise _host_error(f"ufunc {ufunc.__name__!r}")
            return NotImplemented
        is_numpy = getattr(np, ufunc.__name__, None) is ufunc
        if not is_numpy and ufunc.__name__ not in _SPECIAL:
            return NotImplemented  # cupy finds it neither in cupy nor in cupyx.scipy.special
        _note(("ufunc:" if is_numpy else "special:") + ufunc.__name__)
        args = tuple(x._a if isinstance(x, FakeDeviceArray) else (x.item() if isinstance(x, np.ndarray) else x)
                     for x in inputs)
        if out:
            kwargs["out"] = tuple(o._a for o in out)
        res = ufunc(*args, **kwargs)
        if out:
            return out[0] if len(out) == 1 else out
        return _wrap(res)

    def __array_function__(self, func, types_, args, kwargs):
        mod = getattr(func, "__module__", "") or ""
        if not (mod == "numpy" or mod.startswith("numpy.")):
            return NotImplemented
        if not all(issubclass(t, (FakeDeviceArray, np.ndarray)) for t in types_):
            return NotImplemented
        target = sys.modules.get("cupy")
        if not isinstance(target, _FakeCupy):
            return NotImplemented
        for part in mod.split(".")[1:]:
            target = getattr(target, part, None)
        fn = getattr(target, func.__name__, None) if target is not None else None
        if fn is None:
            return NotImplemented
        return fn(*args, **kwargs)

    # container and conversions
    def __len__(self):
        return len(self._a)

    def __iter__(self):
        return (FakeDeviceArray(np.asarray(self._a[i])) for i in range(len(self._a)))

    def __getitem__(self, idx):
        res = self._a[_unwrap(idx, "an index", strict=False)]
        return FakeDeviceArray(res if isinstance(res, np.ndarray) else np.asarray(res))

    def __setitem__(self, idx, value):
        self._a[_unwrap(idx, "an index", strict=False)] = _unwrap(value, "setitem", strict=False)

    def __bool__(self):
        return bool(self._a)

    def __float__(self):
        return float(self._a)

    def __int__(self):
        return int(self._a)

    def __complex__(self):
        return complex(self._a)

    def __repr__(self):
        return "fake_cupy_" + repr(self._a)

    def __str__(self):
        return str(self._a)

    def __format__(self, spec):
        return format(self._a, spec) if self._a.ndim == 0 else str(self._a)


def _make_method(name):
    def method(self, *args, **kwargs):
        _note(f"ndarray.{name}")
        res = getattr(self._a, name)(*_unwrap(args, f"ndarray.{name}"),
                                     **{k: _unwrap(v, f"ndarray.{name}") for k, v in kwargs.items()})
        return _wrap(res)

    method.__name__ = name
    return method


for _m in _METHODS:
    if not hasattr(FakeDeviceArray, _m):
        setattr(FakeDeviceArray, _m, _make_method(_m))
FakeDeviceArray.__module__ = "cupy"  # type(a).__module__.startswith("cupy"): the device test in rmtfl
FakeDeviceArray.__name__ = FakeDeviceArray.__qualname__ = "ndarray"


def _device_fn(qualname, f):
    """``cupy.<name>``: device operands only (numpy arrays raise), numpy results become device arrays."""

    def fn(*args, **kwargs):
        _note(qualname)
        res = f(*_unwrap(args, qualname), **{k: _unwrap(v, qualname) for k, v in kwargs.items()})
        out = kwargs.get("out")
        return out if isinstance(out, FakeDeviceArray) else _wrap(res)

    fn.__name__ = qualname.rsplit(".", 1)[-1]
    return fn


def _transfer_fn(name, f):
    """``cupy.asarray`` and friends: host data is copied to the device; a device array passes through."""

    def fn(obj, *args, **kwargs):
        _note(f"cupy.{name}")
        if isinstance(obj, FakeDeviceArray):
            res = f(obj._a, *args, **kwargs)
            return obj if res is obj._a else FakeDeviceArray(np.asarray(res))
        if _LOG is not None:
            _LOG.h2d += 1
        return FakeDeviceArray(np.array(f(_unwrap(obj, name, strict=False), *args, **kwargs), copy=True))

    fn.__name__ = name
    return fn


class _Namespace(types.ModuleType):
    """A module whose functions are numpy's (or scipy's) behind the device rules."""

    def __init__(self, name, source, prefix, transfer=(), only=None):
        super().__init__(name)
        self._source, self._prefix, self._transfer, self._only = source, prefix, transfer, only

    def __getattr__(self, attr):
        if attr.startswith("_") or (self._only is not None and attr not in self._only):
            raise AttributeError(f"module {self.__name__!r} has no attribute {attr!r} (fake)")
        obj = getattr(self._source, attr)
        _note(self._prefix + attr)
        if isinstance(obj, types.ModuleType):
            raise AttributeError(f"fake cupy: submodule {self._prefix}{attr} is not provided")
        if isinstance(obj, type) or not callable(obj):
            return obj
        if attr in self._transfer:
            return _transfer_fn(attr, obj)
        return _device_fn(self._prefix + attr, obj)


class FakeGenerator:
    """``cupy.random.Generator``: device draws from a stream that is not numpy's ``default_rng(seed)``."""

    def __init__(self, seed):
        self._g = np.random.Generator(np.random.Philox(np.random.SeedSequence(seed)))

    def standard_normal(self, size=None, dtype=np.float64, out=None):
        _note("Generator.standard_normal")
        dt = np.dtype(dtype)
        if dt.char not in ("f", "d"):  # cupy: TypeError "Unsupported dtype ... for standard_normal"
            raise TypeError(f"Unsupported dtype {dt.name} for standard_normal")
        if _LOG is not None:
            _LOG.draws += 1
        return FakeDeviceArray(np.asarray(self._g.standard_normal(() if size is None else size, dtype=dt)))

    def random(self, size=None, dtype=np.float64, out=None):
        _note("Generator.random")
        return FakeDeviceArray(np.asarray(self._g.random(() if size is None else size, dtype=np.dtype(dtype))))


class _FakeCupy(_Namespace):
    def __init__(self, log: _Log, n_devices: int):
        super().__init__("cupy", np, "cupy.", transfer=_TRANSFER)
        self.__version__ = "0.0.0+fake"
        self.ndarray = FakeDeviceArray
        self.linalg = _Namespace("cupy.linalg", np.linalg, "cupy.linalg.")

        def default_rng(seed=None):
            _note("cupy.random.default_rng")
            log.generators += 1
            return FakeGenerator(seed)

        def synchronize():
            _note("cupy.cuda.Stream.null.synchronize")
            log.syncs += 1

        def device_count():
            _note("cupy.cuda.runtime.getDeviceCount")
            if n_devices is None:
                raise RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected (fake)")
            return n_devices

        self.random = types.SimpleNamespace(default_rng=default_rng, Generator=FakeGenerator)
        self.cuda = types.SimpleNamespace(Stream=types.SimpleNamespace(null=types.SimpleNamespace(
            synchronize=synchronize)), runtime=types.SimpleNamespace(
            getDeviceCount=device_count,
            getDeviceProperties=lambda i: {"name": b"fake device", "totalGlobalMem": 2**34}))
        self.log = log

    def asnumpy(self, a, stream=None, order="C"):
        _note("cupy.asnumpy")
        return a.get(order=order) if isinstance(a, FakeDeviceArray) else np.asarray(a, order=order)

    def get_array_module(self, *args):
        _note("cupy.get_array_module")
        return self if any(isinstance(a, FakeDeviceArray) for a in args) else np


_FAKE_MODULES = ("cupy", "cupyx", "cupyx.scipy", "cupyx.scipy.special")


@contextlib.contextmanager
def fake_cupy_installed(n_devices: int | None = 1):
    """Install the fake ``cupy``/``cupyx`` in ``sys.modules``; undo everything (and the cached backend) on exit.

    ``n_devices=None``: ``getDeviceCount`` raises, like a broken CUDA install.
    """
    global _LOG
    import scipy.special

    from rmtfl.numerics import _backend as backend_mod

    log = _Log()
    fake = _FakeCupy(log, n_devices)
    cupyx = types.ModuleType("cupyx")
    cupyx.scipy = types.ModuleType("cupyx.scipy")
    cupyx.scipy.special = _Namespace("cupyx.scipy.special", scipy.special, "cupyx.scipy.special.", only=_SPECIAL)
    mods = {"cupy": fake, "cupyx": cupyx, "cupyx.scipy": cupyx.scipy, "cupyx.scipy.special": cupyx.scipy.special}
    missing = object()
    saved = {k: sys.modules.get(k, missing) for k in _FAKE_MODULES}
    backend_mod._cupy_backend.cache_clear()  # a cached real backend must not shadow the fake
    sys.modules.update(mods)
    _LOG = log
    try:
        yield fake
    finally:
        _LOG = None
        for k, v in saved.items():
            if v is missing:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
        backend_mod._cupy_backend.cache_clear()  # the fake backend must not leak into other tests
