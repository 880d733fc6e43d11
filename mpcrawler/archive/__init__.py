"""Archiving: a crawl kept so that it replays (``--warc``, ``--cdxj``,
``--wacz``, ``--page-requisites``).

- :mod:`.recorder`: the archive's side in a worker: each fetch written, a
  failure to write the page's error;
- :mod:`.warc`: each worker's WARC/1.1 files (request, response, revisit, metadata records);
- :mod:`.cdxj`: the master's sorted CDXJ index of those files;
- :mod:`.wacz`: the WACZ package written at a run's end;
- :mod:`.requisites`: the URLs a page needs to render (its embeds), as wget's ``-p``.

Which record a revisit is archived as is the revisits feature's
(:mod:`mpcrawler.revisits.records`).
"""

INTERFACE = ("recorder", "warc", "cdxj", "wacz", "requisites")  # the modules the layers import
