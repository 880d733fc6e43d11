"""Rendering pages that need JavaScript (``--render``).

- :mod:`.signals`: whether a page needs a browser, from what its HTML shows (pure);
- :mod:`.renderer`: a worker's rendering: which pages go to its browser,
  the browser's requests made as the crawl's, the rendered page analyzed;
- :mod:`.browser`: headless Chromium driven by Playwright (the ``[render]``
  extra), used only through the renderer.
"""

INTERFACE = ("signals", "renderer")  # what the layers import; the browser is this feature's own
