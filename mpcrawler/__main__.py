"""``python -m mpcrawler``: see :mod:`mpcrawler.cli`."""

import sys

from . import stopsignals

# Before the heavy imports: a stop signal while the crawl starts is not fatal.
stopsignals.install()

from .cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
