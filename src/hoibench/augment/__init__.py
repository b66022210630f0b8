"""hoibench.augment (see docs/ARCHITECTURE.md)."""
