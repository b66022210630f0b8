"""hoibench.analysis (see docs/ARCHITECTURE.md)."""
