"""A worker process: download, parse, archive.

``process`` is the worker's loop and its messages to the master; ``links``
resolves and filters what a page links to;
``downloader`` fetches (requests), ``analyzer`` parses (BeautifulSoup or
lxml), ``warc`` archives.  The master never imports these modules.
"""
