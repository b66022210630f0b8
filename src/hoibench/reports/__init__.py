"""hoibench.reports (see docs/ARCHITECTURE.md)."""
