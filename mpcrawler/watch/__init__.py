"""Watching and steering a running crawl from a web page.

- :mod:`.live`: the master writes ``DIR/live.json`` once a second (the figures,
  the busiest and held-back hosts, the workers, the settings, the budget);
- :mod:`.reader`: what the page shows, read from a job dir (or a shared
  crawl's Redis) without the job's lock;
- :mod:`.server`: ``mpcrawler web``, an aiohttp server of the page, its JSON
  (``/api/status``) and its buttons, which act through the control path
  (:mod:`mpcrawler.control.inbox`);
- ``page/``: the page itself (HTML, CSS, JavaScript), served from the package.
"""
