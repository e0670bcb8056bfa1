"""Throughput benchmarks, run by `scripts/benchmark.py`."""
