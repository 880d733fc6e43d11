"""Revisits: fetching a crawl's pages again, conditionally (``--revisit``).

- :mod:`.decisions`: what is kept of a page to fetch it again, when it is
  due, and what an answer means (pure; the master's);
- :mod:`.records`: which WARC record a revisit is archived as (pure; the worker's).

The schedule itself is the frontier's (``Frontier.schedule`` and ``set_revisits``, and its
stores: ``frontier/local/revisits.py``, the Redis frontier's).
"""

INTERFACE = ("decisions", "records")  # what the layers import
