"""Reading matrices for ``rmtfl analyze``: ``.npy``, ``.npz``, ``.safetensors``, PyTorch ``.pt``/``.pth``
(docs/analyze.md §7).

Every loader returns an ordered mapping ``name -> 2-d array`` of the file's 2-d real arrays (1-d tensors such
as biases and norms are skipped; a ``.npy`` holds one array, named after the file).  Bad input is a
``ValueError`` naming ``path`` or ``key``: a missing, unreadable or corrupt file, an unknown suffix, a missing
key, a file without a 2-d real array.  ``safetensors`` and ``torch`` are imported only when such a file is read.

Examples
--------
>>> import numpy as np, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "w.npz")
>>> np.savez(path, layer1=np.ones((3, 4)), bias=np.ones(3))
>>> {k: v.shape for k, v in load_matrices(path).items()}
{'layer1': (3, 4)}
"""
from __future__ import annotations

import os
import zipfile
from collections import OrderedDict
from pathlib import Path

import numpy as np

__all__ = ["load_matrices", "SUFFIXES"]

SUFFIXES = (".npy", ".npz", ".safetensors", ".pt", ".pth")


def _is_matrix(a) -> bool:
    return isinstance(a, np.ndarray) and a.ndim == 2 and a.dtype.kind in "fiu" and a.size > 0


def _npy(path: Path) -> dict:
    try:
        a = np.load(path, allow_pickle=False, mmap_mode="r")
    except (OSError, ValueError, EOFError) as exc:
        raise ValueError(f"path {str(path)!r} is not a readable .npy file: {exc}") from None
    return {path.stem: a}


def _npz(path: Path) -> dict:
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError) as exc:
        raise ValueError(f"path {str(path)!r} is not a readable .npz file: {exc}") from None


def _safetensors(path: Path) -> dict:
    try:
        from safetensors.numpy import load_file
    except ImportError:
        raise ValueError(f"path {str(path)!r}: reading .safetensors needs the optional package 'safetensors' "
                         "(pip install 'rmtfl[safetensors]')") from None
    try:
        return dict(load_file(str(path)))
    except Exception as exc:  # safetensors raises its own SafetensorError on a corrupt header
        raise ValueError(f"path {str(path)!r} is not a readable .safetensors file: {exc}") from None


def _torch(path: Path) -> dict:
    try:
        import torch
    except ImportError:
        raise ValueError(f"path {str(path)!r}: reading a PyTorch state dict needs torch, which is not installed "
                         "(save the weights with numpy.save or safetensors instead)") from None
    try:
        obj = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as exc:
        raise ValueError(f"path {str(path)!r} is not a readable PyTorch file: {exc}") from None
    if isinstance(obj, dict) and "state_dict" in obj and isinstance(obj["state_dict"], dict):
        obj = obj["state_dict"]
    if not isinstance(obj, dict):
        obj = {"tensor": obj}
    out = {}
    for k, t in obj.items():
        if hasattr(t, "detach"):
            t = t.detach().cpu()
            if t.is_floating_point() and t.dtype not in (torch.float32, torch.float64):
                t = t.float()
            out[str(k)] = t.numpy()
    return out


_READERS = {".npy": _npy, ".npz": _npz, ".safetensors": _safetensors, ".pt": _torch, ".pth": _torch}


def load_matrices(path, *, key: str | None = None) -> "OrderedDict[str, np.ndarray]":
    """The 2-d real arrays of a file, in file order: ``{name: array}`` (docs/analyze.md §7).

    ``path``: a ``.npy``, ``.npz``, ``.safetensors`` (optional package ``safetensors``) or ``.pt``/``.pth`` file
    (a PyTorch state dict; only when torch is installed).  ``key`` (keyword-only): keep only that array (its name
    in the file; for ``.npy`` the file's stem).  Complex arrays are refused (``ValueError`` naming the array),
    1-d and higher-rank arrays skipped; ``float16``/``bfloat16`` tensors are read as ``float32``.

    >>> import numpy as np, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "W.npy")
    >>> np.save(path, np.eye(3))
    >>> list(load_matrices(path))
    ['W']
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a file name, got {type(path).__name__}")
    p = Path(path)
    if key is not None and not isinstance(key, str):
        raise TypeError(f"key must be a string, got {type(key).__name__}")
    suffix = p.suffix.lower()
    if suffix not in _READERS:
        raise ValueError(f"path {str(p)!r} must end in one of {', '.join(SUFFIXES)}")
    if not p.is_file():
        raise ValueError(f"path {str(p)!r} does not exist or is not a file")
    raw = _READERS[suffix](p)
    if key is not None:
        if key not in raw:
            names = ", ".join(map(repr, list(raw)[:20]))
            raise ValueError(f"key {key!r} is not in {str(p)!r} (it holds {names or 'nothing'})")
        raw = {key: raw[key]}
    out = OrderedDict()
    for name, a in raw.items():
        a = np.asarray(a)
        if a.dtype.kind == "c":
            raise ValueError(f"array {name!r} of {str(p)!r} is complex: only real matrices can be analysed")
        if a.dtype == np.float16:
            a = a.astype(np.float32)
        if _is_matrix(a):
            out[name] = a
        elif key is not None:
            raise ValueError(f"key {key!r} of {str(p)!r} is not a non-empty 2-d real array (shape {a.shape}, "
                             f"dtype {a.dtype})")
    if not out:
        raise ValueError(f"path {str(p)!r} holds no non-empty 2-d real array")
    return out
