"""Robots: what a crawl is allowed, by robots.txt (RFC 9309) and by each page.

- :mod:`.rules`: one host's robots.txt rules for our user agent (protego), and its decoding;
- :mod:`.answers`: what becomes, in the master, of a host's robots.txt answer;
- :mod:`.cache`: the robots.txt files a crawl read, kept in its job dir;
- :mod:`.page`: what a page asks (``<meta name="robots">``, ``X-Robots-Tag``, ``rel``).
"""

INTERFACE = ("rules", "answers", "cache", "page")  # what the layers import
