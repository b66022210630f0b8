"""The one results model: every result kind, and the record that pairs a result with its model,
its benchmark and the other keys of its file.

:data:`KINDS` is the only list of kinds. Reading dispatches on an object's ``kind`` and nothing
else (no guessing from the keys present): an object without one is an error that says what to add.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from hoibench._exceptions import ConfigError, FormatError
from hoibench.evaluation import ClassRecall, HICOMapResult, HICOMatches, MCQResult, VCOCOResult
from hoibench.results._stats import BenchmarkStats

__all__ = ["KINDS", "Result", "ResultRecord", "file_stem", "result_from_json"]

#: any result type of :data:`KINDS`
Result = HICOMapResult | VCOCOResult | MCQResult | ClassRecall | HICOMatches | BenchmarkStats

#: kind -> result type: every kind hoibench writes, plus the split ``stats.json`` kinds it reads
KINDS: Mapping[str, type[Any]] = MappingProxyType({
    **{t.kind: t for t in (HICOMapResult, VCOCOResult, MCQResult, ClassRecall, HICOMatches)},
    **{k: BenchmarkStats for k in BenchmarkStats.read_kinds},
})

_TYPES = tuple(dict.fromkeys(KINDS.values()))

#: keys of every result object that belong to the record, not to the result
ENVELOPE = frozenset({"kind", "version", "model", "benchmark"})

R = TypeVar("R")


def file_stem(file: object) -> str:
    """A file's name without its extensions (``a.json.gz`` -> ``a``): the name of a model that
    was not named (the prediction file's stem when scoring, the result file's when reading)."""
    if not file:
        return "model"
    name = Path(str(file)).name
    for ext in (".gz", ".jsonl", ".json"):
        name = name.removesuffix(ext)
    return name or "model"


def result_from_json(d: Any, *, file: object = None, record: object = None) -> Result:
    """The typed result of a parsed JSON object, by its ``kind``."""
    if not isinstance(d, dict):
        raise FormatError(f"expected a JSON object, got {type(d).__name__}", file=file, record=record)
    kind = d.get("kind")
    if kind is None:
        raise FormatError(f"missing: a result object names its kind, one of {sorted(KINDS)} (results "
                          "of `hoibench mcq score --json` written before kinds existed need "
                          '"kind": "mcq_metrics" added)', file=file, record=record, field="kind")
    if kind not in KINDS:
        raise FormatError(f"expected one of {sorted(KINDS)}, got {kind!r}", file=file, record=record,
                          field="kind")
    return KINDS[kind].from_json(d, file=file, record=record)


@dataclass(frozen=True)
class ResultRecord(Generic[R]):
    """A result as one JSON object holds it.

    Attributes
    ----------
    result:
        The typed result (:data:`Result`).
    model, benchmark:
        What was scored on what (read as the file name's stem and ``"benchmark"`` when a file
        leaves them out or empty).
    extra:
        Every other key of the object, JSON-ready and kept as written: provenance the writer
        added (``dropped``, ``prediction_format``, ``evaluate_by_hand``, ``permutations``,
        ``position_sensitivity``, ``questions_file``, ...).
    source:
        The file it was read from or written to (``""`` when in memory).
    """

    result: R
    model: str = ""
    benchmark: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.result, _TYPES):
            raise ConfigError(f"not a result type: {type(self.result).__name__} (kinds: {sorted(KINDS)})")
        clash = sorted(set(self.extra) & (type(self.result).json_keys | ENVELOPE))
        if clash:
            raise ConfigError(f"extra keys {clash} are keys of the {self.kind} object itself")

    @property
    def kind(self) -> str:
        return str(self.result.kind)  # type: ignore[attr-defined]

    def to_json(self) -> dict[str, Any]:
        """The JSON object: the result's keys, then :attr:`extra`."""
        out = self.result.to_json(model=self.model, benchmark=self.benchmark)  # type: ignore[attr-defined]
        out.update(self.extra)
        return out

    @classmethod
    def from_json(cls, d: Any, *, file: object = None, record: object = None) -> ResultRecord[Any]:
        """Read one result object (dispatch on ``kind``, see :func:`result_from_json`)."""
        result = result_from_json(d, file=file, record=record)
        names = {}
        for key in ("model", "benchmark"):
            v = d.get(key)
            if v is not None and not isinstance(v, str):
                raise FormatError(f"expected a string, got {type(v).__name__}", file=file, record=record,
                                  field=key)
            names[key] = v or ""
        keys = type(result).json_keys
        return cls(result=result, model=names["model"] or file_stem(file),
                   benchmark=names["benchmark"] or (result.name if isinstance(result, BenchmarkStats)
                                                    else "benchmark"),
                   extra={k: v for k, v in d.items() if k not in keys and k not in ENVELOPE},
                   source=str(file or ""))
