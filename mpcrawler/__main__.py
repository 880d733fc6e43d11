"""``python -m mpcrawler``: see :mod:`mpcrawler.cli`."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
