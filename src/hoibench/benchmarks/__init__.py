"""hoibench.benchmarks (see docs/ARCHITECTURE.md)."""
