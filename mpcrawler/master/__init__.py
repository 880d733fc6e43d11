"""The master process: the only writer of crawl state.

``crawler`` runs a crawl (settings in, stats out); ``job`` owns a run's
lifecycle (lock, resume, checkpoint, shutdown); ``engine`` is the turn of the
loop; ``results`` decides what a result becomes and ``settle`` writes what
ended; ``scheduler`` is per-host politeness over the frontier; ``pool`` is
the worker processes, seen through the events of ``wait()``, and
``forkserver`` what they fork from.
"""
