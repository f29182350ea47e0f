"""Benchmarks, soak test and load tooling for the partner service (``make bench``, ``make soak``)."""
