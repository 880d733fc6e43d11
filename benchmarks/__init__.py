"""The project's benchmarks: one script a question, run by ``python -m
benchmarks NAME [ARGS...]`` (``python -m benchmarks`` lists them); see
``benchmarks/README.md``.  ``common`` holds what several share (servers,
crawls, measurements)."""
