"""hoibench: build, run and score Human-Object Interaction benchmarks.

Packages: :mod:`hoibench.vocab` (label spaces), :mod:`hoibench.data` (the core model),
:mod:`hoibench.formats` (file formats), :mod:`hoibench.datasets` (bundled data),
:mod:`hoibench.benchmarks`, :mod:`hoibench.evaluation`, :mod:`hoibench.runners`,
:mod:`hoibench.augment`, :mod:`hoibench.analysis`, :mod:`hoibench.reports`.
"""

from hoibench._exceptions import (
    ConfigError,
    FormatError,
    HOIBenchError,
    MissingExtraError,
    ValidationError,
)
from hoibench._version import __version__

__all__ = [
    "ConfigError",
    "FormatError",
    "HOIBenchError",
    "MissingExtraError",
    "ValidationError",
    "__version__",
]
