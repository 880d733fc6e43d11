"""The version of mpcrawler, in a module of its own so no module imports the package root."""

__version__ = "0.1.0"
