"""Tests of the benchmark harness (that it runs and writes well-formed results; no timing)."""
