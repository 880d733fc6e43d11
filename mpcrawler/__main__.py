"""``python -m mpcrawler``: see :mod:`mpcrawler.cli`."""

import sys

from . import stopsignals

# Before the heavy imports: a stop signal while the crawl starts is not fatal.
stopsignals.install()

if __name__ == "__main__" and sys.argv[1:2] == ["crawl"]:
    # The workers' imports (the forkserver's) start now, beside the master's
    # own: a crawl's first worker was ready 0.1 s after the crawl started.
    from .master.forkserver import named_downloader, start_forkserver

    start_forkserver(named_downloader(sys.argv[2:]))

from .cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
