"""Shared pytest configuration: the ``gpu`` marker skips cleanly without a CUDA device."""
import pytest


def _gpu_available() -> bool:
    try:
        from rmtfl.numerics import get_backend

        get_backend("cupy")
        return True
    except ValueError:
        return False


def pytest_collection_modifyitems(config, items):
    if any("gpu" in item.keywords for item in items) and not _gpu_available():
        skip = pytest.mark.skip(reason="needs cupy and a CUDA device")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)
