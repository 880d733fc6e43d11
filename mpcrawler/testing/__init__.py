"""Servers for tests, demos and benchmarks: the built-in site and a Redis starter."""
