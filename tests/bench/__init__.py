"""Benchmarks (run as modules, e.g. `python -m tests.bench.codec`)."""
