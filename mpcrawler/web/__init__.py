"""Web standards without I/O: URLs and scope, robots.txt, sitemaps, content
codings, addresses, and the redaction of secrets from URLs."""
