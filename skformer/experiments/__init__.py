"""Benchmarks and probes that reproduce and extend the paper's measurements."""
