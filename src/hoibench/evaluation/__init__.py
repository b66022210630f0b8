"""hoibench.evaluation (see docs/ARCHITECTURE.md)."""
