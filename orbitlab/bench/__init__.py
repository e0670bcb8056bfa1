"""Throughput benchmarks, run by `orbitlab bench` (= `scripts/benchmark.py`)."""
