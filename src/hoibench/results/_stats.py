"""Statistics of a benchmark (each paper's Table 1) as rows of a report table: the
``benchmark_stats`` kind, also read from the ``stats.json`` of ``hoibench split sg`` (``sg_stats``)
and ``hoibench split balanced`` (``balanced_stats``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from hoibench.evaluation._fields import Fields, result_header

__all__ = ["BenchmarkStats"]


@dataclass(frozen=True)
class BenchmarkStats:
    """Named rows of ``{column: value}``: one statistics table of a benchmark."""

    name: str
    rows: tuple[dict[str, Any], ...]

    kind: ClassVar[str] = "benchmark_stats"
    #: the split ``stats.json`` kinds this type also reads (it writes ``benchmark_stats``)
    read_kinds: ClassVar[tuple[str, ...]] = ("benchmark_stats", "sg_stats", "balanced_stats")
    json_keys: ClassVar[frozenset[str]] = frozenset({"rows"})

    def to_json(self, *, model: str | None = None, benchmark: str | None = None) -> dict[str, Any]:
        """``{"kind": "benchmark_stats", "benchmark": name, "rows": [{column: value}]}``."""
        out = result_header(self.kind, model, self.name if benchmark is None else benchmark)
        out["rows"] = [dict(r) for r in self.rows]
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any], *, file: object = None, record: object = None) -> BenchmarkStats:
        """Read any of :attr:`read_kinds` (the split files' own layouts become rows)."""
        f = Fields(d, file=file, record=record)
        kind = f.check_kind(cls.read_kinds)
        if kind == "sg_stats":
            return cls._sg(f)
        if kind == "balanced_stats":
            return cls._balanced(f)
        rows = f.d.get("rows")
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise f.error("rows", "expected a list of objects")
        return cls(name=f.string("benchmark", default="stats"), rows=tuple(rows))

    @classmethod
    def _sg(cls, f: Fields) -> BenchmarkStats:
        """The SG paper's Table 1 row (train and test parts) of ``hoibench split sg``."""
        t1 = f.sub("table1")
        name = f.string("name", default="SG split")
        rows = []
        for part in ("train", "test"):
            row: dict[str, Any] = {"data split": name, "part": part}
            for key in ("images", "triplets", "combinations"):
                v = t1.d.get(key)
                if not isinstance(v, dict) or isinstance(v.get(part), bool) or not isinstance(v.get(part), int):
                    raise t1.error(key, f"expected an integer {part} count")
                row[key] = v[part]
            rows.append(row)
        return cls(name=name, rows=tuple(rows))

    @classmethod
    def _balanced(cls, f: Fields) -> BenchmarkStats:
        """Table 1 / S1 rows per set of ``hoibench split balanced``."""
        sets = f.mapping("sets")
        for k, v in sets.items():
            if not isinstance(v, dict):
                raise f.error(f"sets.{k}", "expected an object of statistics")
        deficit = f.mapping("total_deficit", default={})
        params = f.mapping("params", default={})
        rows = tuple({"set": k, **v, "deficit": deficit.get(k)} for k, v in sets.items())
        name = f"B-RIGHT (top {params.get('top_k', '?')}, seed {params.get('seed', '?')})"
        return cls(name=name, rows=rows)
