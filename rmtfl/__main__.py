"""``python -m rmtfl``: the same as the ``rmtfl`` command."""
import sys

from rmtfl.cli import main

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
