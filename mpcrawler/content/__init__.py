"""A page's content: its main text, metadata and language, its fingerprints,
and the content index that knows a text met again (``--extract``, ``--dedup``).

- :mod:`.extract`: main-content extraction (text and Markdown) from the analyzer's tree;
- :mod:`.metadata`: author, dates, description, site name, tags;
- :mod:`.language`: the page's language;
- :mod:`.fingerprint`: the exact digest and 64-bit simhash a worker takes of the text;
- :mod:`.index`: the ``ContentIndex`` contract the master checks each page against.

The index's stores are the frontiers' (``frontier/local/content.py`` in
the job dir, ``frontier/redis/content.py`` for a shared crawl): each
implements :class:`.index.ContentIndex`.
"""

INTERFACE = ("extract", "metadata", "language", "fingerprint", "index")  # what the layers import
