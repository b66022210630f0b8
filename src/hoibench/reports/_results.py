"""Evaluation results as typed records, read from the JSON files the evaluators write.

Kinds (see ``docs/interfaces.md``):

- ``hico_map``: mAP results of ``hoibench eval hico --json`` (percent; per-class AP as fractions);
- ``mcq_metrics``: multiple-choice metrics of ``hoibench mcq score --json`` (fractions), with
  optional bootstrap confidence intervals;
- ``class_recall``: per-class recall and train counts, for head-to-tail plots;
- ``benchmark_stats`` (``{"benchmark", "rows": [{column: value}]}``), and the ``stats.json`` of
  ``hoibench split sg`` (``sg_stats``) and ``hoibench split balanced`` (``balanced_stats``):
  statistics tables.

Readers check every field they use and raise :class:`~hoibench.FormatError` naming the file and
the field, so ``hoibench report`` never draws a plot from a malformed file.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hoibench._exceptions import FormatError
from hoibench._io import read_json

__all__ = [
    "MCQ_METRICS",
    "ClassRecall",
    "MCQMetricsResult",
    "MapResult",
    "StatsResult",
    "load_result",
    "load_results",
    "result_from_dict",
]

#: the multiple-choice metrics, in the order reports show them
MCQ_METRICS = ("macro_f1", "instance_f1", "micro_f1", "exact_match", "avg_precision", "avg_recall")


def _num(d: Mapping[str, Any], key: str, file: Any, *, optional: bool = False) -> float | None:
    v = d.get(key)
    if v is None:
        if optional:
            return None
        raise FormatError("missing number", file=file, field=key)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise FormatError(f"expected a number, got {type(v).__name__}", file=file, field=key)
    if not math.isfinite(float(v)):
        raise FormatError(f"expected a finite number, got {v}", file=file, field=key)
    return float(v)


def _str(d: Mapping[str, Any], key: str, file: Any, default: str) -> str:
    v = d.get(key, default)
    if v is None:
        return default
    if not isinstance(v, str):
        raise FormatError(f"expected a string, got {type(v).__name__}", file=file, field=key)
    return v


def _float_list(d: Mapping[str, Any], key: str, file: Any, *, n: int | None = None,
                allow_null: bool = True) -> np.ndarray:
    v = d.get(key)
    if not isinstance(v, list):
        raise FormatError("expected a list", file=file, field=key)
    if n is not None and len(v) != n:
        raise FormatError(f"expected {n} entries, got {len(v)}", file=file, field=key)
    out = np.empty(len(v), dtype=float)
    for i, x in enumerate(v):
        if x is None and allow_null:
            out[i] = np.nan
        elif isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x):
            out[i] = x
        else:
            raise FormatError(f"entry {i}: expected a number{' or null' if allow_null else ''}, "
                              f"got {x!r}", file=file, field=key)
    return out


def _map_ci(raw: Any, file: Any) -> tuple[dict[str, tuple[float, float]], float | None]:
    """The optional ``ci`` object of mAP results: ``{metric: [low, high] | null, "level": ...}``."""
    if raw is None:
        return {}, None
    if not isinstance(raw, dict):
        raise FormatError("expected an object {metric: [low, high]}", file=file, field="ci")
    out = {}
    for k, v in raw.items():
        if not isinstance(v, list):
            continue  # level, n_boot, seed, method, bias, ...: not intervals
        if (len(v) != 2 or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)
                or not v[0] <= v[1]):
            raise FormatError(f"expected [low, high], got {v!r}", file=file, field=f"ci.{k}")
        out[str(k)] = (float(v[0]), float(v[1]))
    level = raw.get("level")
    return out, float(level) if isinstance(level, (int, float)) and not isinstance(level, bool) else None


@dataclass(frozen=True)
class MapResult:
    """HICO-DET mAP of one model on one benchmark (percent), with per-class AP (fraction)."""

    model: str
    benchmark: str
    protocol: str
    full: float
    rare: float | None = None
    non_rare: float | None = None
    known_object: bool = False
    subsets: dict[str, float] = field(default_factory=dict)
    per_class_ap: np.ndarray | None = None  # fraction, NaN = no ground truth
    n_gt: np.ndarray | None = None
    class_names: tuple[str, ...] = ()
    headline_name: str = "full"
    ci: dict[str, tuple[float, float]] = field(default_factory=dict)  # percent, bootstrap
    ci_level: float | None = None
    source: str = ""

    kind = "hico_map"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, file: Any = None) -> MapResult:
        per_class = n_gt = None
        names: tuple[str, ...] = ()
        if d.get("per_class_ap") is not None:
            per_class = _float_list(d, "per_class_ap", file)
            ok = per_class[~np.isnan(per_class)]
            if np.any((ok < 0) | (ok > 1 + 1e-9)):  # 11-point sums may end at 1.0000000000000002
                raise FormatError("per-class AP must be fractions in [0, 1]", file=file,
                                  field="per_class_ap")
            if d.get("n_gt") is not None:
                n_gt = _float_list(d, "n_gt", file, n=len(per_class), allow_null=False).astype(np.int64)
            if d.get("class_names") is not None:
                cn = d["class_names"]
                if not isinstance(cn, list) or len(cn) != len(per_class):
                    raise FormatError(f"expected {len(per_class)} names", file=file, field="class_names")
                names = tuple(str(x) for x in cn)
        subsets = d.get("subsets") or {}
        if not isinstance(subsets, dict):
            raise FormatError("expected an object {name: mAP}", file=file, field="subsets")
        headline = _str(d, "headline", file, "full")
        if headline != "full" and headline not in subsets:
            raise FormatError(f"must be 'full' or a key of subsets {sorted(subsets)}; got {headline!r}",
                              file=file, field="headline")
        ci, level = _map_ci(d.get("ci"), file)
        return cls(
            ci=ci,
            ci_level=level,
            model=_str(d, "model", file, Path(str(file)).stem if file else "model"),
            benchmark=_str(d, "benchmark", file, "benchmark"),
            protocol=_str(d, "protocol", file, "official"),
            full=float(_num(d, "full", file)),  # type: ignore[arg-type]
            rare=_num(d, "rare", file, optional=True),
            non_rare=_num(d, "non_rare", file, optional=True),
            known_object=bool(d.get("known_object", False)),
            subsets={str(k): float(_num(subsets, k, file)) for k in subsets},  # type: ignore[arg-type]
            per_class_ap=per_class,
            n_gt=n_gt,
            class_names=names,
            headline_name=headline,
            source=str(file or ""),
        )

    @property
    def headline_ci(self) -> tuple[float, float] | None:
        """Bootstrap interval of :attr:`headline` (percent), when the evaluator computed one."""
        return self.ci.get(self.headline_name)

    @property
    def headline(self) -> float:
        """The benchmark's main number (percent): ``full``, or the subset named by ``headline``
        (e.g. ``unseen`` for an SG split, whose test set holds only unseen combinations)."""
        return self.full if self.headline_name == "full" else self.subsets[self.headline_name]

    @property
    def class_ap_percent(self) -> np.ndarray:
        """AP (percent) of the classes with ground truth (empty when the file has no per-class AP).

        Classes are those with ``n_gt > 0`` when ``n_gt`` is given, else those with a non-null AP.
        """
        if self.per_class_ap is None:
            return np.zeros(0)
        ap = self.per_class_ap
        keep = ~np.isnan(ap) if self.n_gt is None else (self.n_gt > 0) & ~np.isnan(ap)
        return 100.0 * ap[keep]


@dataclass(frozen=True)
class MCQMetricsResult:
    """Multiple-choice metrics (fractions) of one model on one question set, with optional CIs."""

    model: str
    benchmark: str
    metrics: dict[str, float]
    ci: dict[str, tuple[float, float]] = field(default_factory=dict)
    protocol: str = "paper"
    n_questions: int | None = None
    confidence: float | None = None
    source: str = ""

    kind = "mcq_metrics"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, file: Any = None) -> MCQMetricsResult:
        metrics = {}
        for k in MCQ_METRICS:
            v = _num(d, k, file, optional=True)
            if v is not None:
                if not 0.0 <= v <= 1.0:
                    raise FormatError(f"expected a fraction in [0, 1], got {v}", file=file, field=k)
                metrics[k] = v
        if not metrics:
            raise FormatError(f"no metric among {list(MCQ_METRICS)}", file=file)
        ci_raw = d.get("ci") or {}
        if not isinstance(ci_raw, dict):
            raise FormatError("expected an object {metric: [low, high]}", file=file, field="ci")
        ci = {}
        for k, v in ci_raw.items():
            if k not in metrics:
                continue
            if (not isinstance(v, (list, tuple)) or len(v) != 2
                    or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)):
                raise FormatError(f"expected [low, high], got {v!r}", file=file, field=f"ci.{k}")
            lo, hi = float(v[0]), float(v[1])
            if not lo <= hi:
                raise FormatError(f"low {lo} above high {hi}", file=file, field=f"ci.{k}")
            ci[k] = (lo, hi)
        n = d.get("n_questions")
        return cls(
            model=_str(d, "model", file, Path(str(file)).stem if file else "model"),
            benchmark=_str(d, "benchmark", file, "questions"),
            metrics=metrics,
            ci=ci,
            protocol=_str(d, "protocol", file, "paper"),
            n_questions=int(n) if isinstance(n, int) and not isinstance(n, bool) else None,
            confidence=_num(d, "confidence", file, optional=True),
            source=str(file or ""),
        )


@dataclass(frozen=True)
class ClassRecall:
    """Recall per class and each class's train count: the data of a head-to-tail plot."""

    model: str
    benchmark: str
    train_counts: np.ndarray
    recall: np.ndarray  # NaN: class never among the correct answers
    class_names: tuple[str, ...] = ()
    source: str = ""

    kind = "class_recall"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, file: Any = None) -> ClassRecall:
        counts = _float_list(d, "train_counts", file, allow_null=False)
        recall = _float_list(d, "recall", file, n=len(counts))
        ok = recall[~np.isnan(recall)]
        if np.any((ok < 0) | (ok > 1)):
            raise FormatError("recall must be fractions in [0, 1]", file=file, field="recall")
        names = d.get("class_names") or []
        if names and len(names) != len(counts):
            raise FormatError(f"expected {len(counts)} names", file=file, field="class_names")
        return cls(
            model=_str(d, "model", file, Path(str(file)).stem if file else "model"),
            benchmark=_str(d, "benchmark", file, "questions"),
            train_counts=counts,
            recall=recall,
            class_names=tuple(str(x) for x in names),
            source=str(file or ""),
        )

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "model": self.model, "benchmark": self.benchmark,
                "class_names": list(self.class_names), "train_counts": self.train_counts.tolist(),
                "recall": [None if np.isnan(r) else float(r) for r in self.recall]}


@dataclass(frozen=True)
class StatsResult:
    """Statistics of one benchmark (the papers' Table 1 rows): rows of {column: value}."""

    benchmark: str
    rows: tuple[dict[str, Any], ...]
    source: str = ""

    kind = "benchmark_stats"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, file: Any = None) -> StatsResult:
        rows = d.get("rows")
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise FormatError("expected a list of objects", file=file, field="rows")
        return cls(benchmark=_str(d, "benchmark", file, Path(str(file)).stem if file else "stats"),
                   rows=tuple(rows), source=str(file or ""))


def _sg_stats(d: Mapping[str, Any], *, file: Any = None) -> StatsResult:
    """``stats.json`` of ``hoibench split sg``: the SG paper's Table 1 row."""
    t1 = d.get("table1")
    if not isinstance(t1, dict):
        raise FormatError("expected an object", file=file, field="table1")
    name = _str(d, "name", file, "SG split")
    rows = []
    for part in ("train", "test"):
        row: dict[str, Any] = {"data split": name, "part": part}
        for key in ("images", "triplets", "combinations"):
            v = t1.get(key)
            if not isinstance(v, dict) or not isinstance(v.get(part), int):
                raise FormatError(f"expected an integer {part} count", file=file, field=f"table1.{key}")
            row[key] = v[part]
        rows.append(row)
    return StatsResult(benchmark=name, rows=tuple(rows), source=str(file or ""))


def _balanced_stats(d: Mapping[str, Any], *, file: Any = None) -> StatsResult:
    """``stats.json`` of ``hoibench split balanced``: Table 1 / S1 rows per set."""
    sets = d.get("sets")
    if not isinstance(sets, dict) or not all(isinstance(v, dict) for v in sets.values()):
        raise FormatError("expected an object {set: statistics}", file=file, field="sets")
    deficit = d.get("total_deficit") or {}
    params = d.get("params") or {}
    rows = tuple({"set": k, **v, "deficit": deficit.get(k)} for k, v in sets.items())
    name = f"B-RIGHT (top {params.get('top_k', '?')}, seed {params.get('seed', '?')})"
    return StatsResult(benchmark=name, rows=rows, source=str(file or ""))


Result = MapResult | MCQMetricsResult | ClassRecall | StatsResult
_KINDS: dict[str, Any] = {c.kind: c for c in (MapResult, MCQMetricsResult, ClassRecall, StatsResult)}
_READERS: dict[str, Any] = {**{k: c.from_dict for k, c in _KINDS.items()},
                            "sg_stats": _sg_stats, "balanced_stats": _balanced_stats}


def result_from_dict(d: Any, *, file: Any = None) -> Result:
    """A typed result from a parsed JSON object (``kind`` picks the type).

    Objects without ``kind`` are accepted when their shape is unambiguous: ``full`` and
    ``per_class_ap`` make mAP results, the multiple-choice metric keys make MCQ metrics.
    """
    if not isinstance(d, dict):
        raise FormatError(f"expected a JSON object, got {type(d).__name__}", file=file)
    kind = d.get("kind")
    if kind is None:
        if "full" in d and ("per_class_ap" in d or "rare" in d):
            kind = "hico_map"
        elif any(k in d for k in MCQ_METRICS):
            kind = "mcq_metrics"
        else:
            raise FormatError(f"cannot tell what results these are: no 'kind' (one of "
                              f"{sorted(_READERS)}) and no known keys", file=file, field="kind")
    if kind not in _READERS:
        raise FormatError(f"kind must be one of {sorted(_READERS)}; got {kind!r}", file=file, field="kind")
    return _READERS[kind](d, file=file)


def load_result(path: str | Path) -> list[Result]:
    """Results of one file: a JSON object, a JSON list of objects, or JSON lines."""
    p = Path(path)
    if p.suffix == ".jsonl":
        import orjson

        from hoibench._io import read_bytes

        out: list[Result] = []
        for i, line in enumerate(read_bytes(p).splitlines()):
            if not line.strip():
                continue
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise FormatError(f"not valid JSON ({exc})", file=p, record=i) from None
            out.append(result_from_dict(obj, file=f"{p}: record {i}"))
        return out
    data = read_json(p)
    if isinstance(data, list):
        return [result_from_dict(x, file=f"{p}: record {i}") for i, x in enumerate(data)]
    return [result_from_dict(data, file=p)]


def load_results(paths: Sequence[str | Path]) -> list[Result]:
    """Results of several files, in the order given."""
    return [r for p in paths for r in load_result(p)]
