"""The one exception hierarchy of hoibench.

::

    HOIBenchError
    ├── FormatError        a file does not hold what its format promises (names file, record, field)
    ├── ValidationError    a value is out of range or inconsistent (boxes, ids, sizes)
    ├── ConfigError        contradictory or unknown parameters
    └── MissingExtraError  an optional dependency is not installed (says which ``pip install``)

Every CLI command turns these into one line on stderr and a non-zero exit code.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "FormatError",
    "HOIBenchError",
    "MissingExtraError",
    "ValidationError",
]


class HOIBenchError(Exception):
    """Base class of every error hoibench raises on purpose."""


class FormatError(HOIBenchError, ValueError):
    """A file's content does not match its format.

    The message reads ``file: record N: field: problem`` so that users can find the spot.
    """

    def __init__(
        self,
        problem: str,
        *,
        file: object = None,
        record: object = None,
        field: str | None = None,
    ) -> None:
        self.file = None if file is None else str(file)
        self.record = record
        self.field = field
        self.problem = problem
        parts = []
        if self.file is not None:
            parts.append(self.file)
        if record is not None:
            parts.append(f"record {record}")
        if field is not None:
            parts.append(field)
        parts.append(problem)
        super().__init__(": ".join(parts))


class ValidationError(HOIBenchError, ValueError):
    """A value is out of range or inconsistent."""


class ConfigError(HOIBenchError, ValueError):
    """Parameters are unknown, contradictory or out of range."""


class MissingExtraError(HOIBenchError, ImportError):
    """An optional dependency is missing; the message names the ``pip install`` to run."""

    def __init__(self, package: str, extra: str, purpose: str = "") -> None:
        what = f" for {purpose}" if purpose else ""
        super().__init__(
            f"{package} is needed{what}: pip install 'hoibench[{extra}]' (or pip install {package})"
        )
