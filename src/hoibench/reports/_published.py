"""``hoibench report --published``: the papers' published rows (:func:`hoibench.benchmarks.
published_results`) beside a user's results, where they measure the same thing.

A published row is *comparable* with a result when all of these agree (the one rule, in
:func:`_match`):

- the benchmark (hoibench's names, case and spaces ignored: ``HICO-DET-SG1``, ``B-RIGHT``,
  ``b-right zero-shot``, ``hico-det-rf-uc``, ``v-coco-sg2`` …) and the part (``:train`` or test);
- the metric: mAP over the same class set (``full``, an SG test set's ``unseen``, B-RIGHT's
  ``selected``, a zero-shot test's ``unseen``) in the Default setting (not Known-Object);
  V-COCO role AP; a multiple-choice metric;
- multiple choice only: the same setting (1, 2, 3) and the released script's counting
  (``--protocol crosshoi``), which produced every published multiple-choice number.

Comparable rows join the records as models named ``MODEL [PAPER TABLE]``, so every table and
figure of the report shows them next to the user's models (V-COCO rows appear in the comparison
table only: the report's V-COCO figures need per-class APs the papers do not print). Everything
else is said in one line per benchmark.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hoibench.analysis import mcq_setting, parse_sg_benchmark
from hoibench.benchmarks import PublishedRow, published_results
from hoibench.evaluation import (
    MCQ_METRIC_NAMES,
    HICOMapResult,
    HICOProtocol,
    MCQResult,
    VCOCOResult,
)
from hoibench.reports._tables import Table
from hoibench.results import ResultRecord

__all__ = ["PublishedComparison", "canonical_benchmark", "compare_published", "comparison_table", "published_tables"]

#: names users give the zero-shot benchmarks -> the rows' names
_ALIASES = {"b-right-zs": "b-right-zero-shot", "b-right-zeroshot": "b-right-zero-shot",
            "hico-det-rfuc": "hico-det-rf-uc"}
_PAPER_SHORT = {"000": "SG", "001": "MCQ", "002": "B-RIGHT"}
#: the mAP code behind the papers' detection numbers is each model's own and not named
_UNSTATED = HICOProtocol(name="as published")


def canonical_benchmark(name: str) -> tuple[str, str]:
    """``(benchmark, part)`` of a result's benchmark name in the rows' spelling:
    ``"HICO-DET-SG1:train"`` -> ``("hico-det-sg1", "train")``."""
    family, split, part = parse_sg_benchmark(re.sub(r"[\s_]+", "-", name.strip()))
    bench = family if split is None else f"{family}-sg{split}"
    return _ALIASES.get(bench, bench), part


def _tag(row: PublishedRow) -> str:
    own = " own paper" if row.row.startswith("(mAP in literature)") else ""
    return f"{row.model} [{_PAPER_SHORT[row.paper]} {row.table.replace('Table ', 'T')}{own}]"


@dataclass
class PublishedComparison:
    """What ``--published`` adds: published records to show beside the user's, the rows of the
    comparison table, and one line per result group that has no comparable published row."""

    records: list[ResultRecord[Any]] = field(default_factory=list)
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _map_value(r: HICOMapResult, classes: str) -> float | None:
    """The user's mAP over ``classes`` (fraction), or None when the result has no such mean."""
    if classes == r.headline:
        return r.headline_map
    if classes in r.subsets:
        return float(r.subsets[classes])
    return r.full if classes == "full" else None


def _user_side(rec: ResultRecord[Any]) -> tuple[str, str, str, str | None] | str:
    """``(benchmark, part, setting, protocol)`` of a result, or why no published row can match."""
    r = rec.result
    bench, part = canonical_benchmark(rec.benchmark)
    if isinstance(r, MCQResult):
        s = mcq_setting(rec)
        if s is None:
            return (f"{rec.benchmark}: a result's setting is not recorded (file key 'setting' or "
                    "'setting N' in the benchmark name), so no published multiple-choice row is comparable")
        return "mcq-hoi", "test", str(s), r.protocol
    if isinstance(r, HICOMapResult) and r.known_object:
        return (f"{rec.benchmark} ({rec.model}): scored in the Known-Object setting; the papers publish "
                "the Default setting only")
    return bench, part, "zero-shot" if bench in ("b-right-zero-shot", "hico-det-rf-uc") else "default", None


def _match(rec: ResultRecord[Any], rows: Sequence[PublishedRow]) -> tuple[list[PublishedRow], str | None]:
    """The published rows comparable with ``rec`` and, when there are none, the one-line reason."""
    side = _user_side(rec)
    if isinstance(side, str):
        return [], side
    bench, part, setting, protocol = side
    r = rec.result
    same = [p for p in rows if p.benchmark == bench and p.part == part and p.value is not None]
    if not same:
        covered = sorted({p.benchmark + ("" if p.part == "test" else ":train") for p in rows})
        return [], (f"{rec.benchmark}: the papers publish no result on this benchmark and part "
                    f"(they cover {', '.join(covered)})")
    if isinstance(r, MCQResult):
        shown = rec.benchmark if f"setting {setting}" in rec.benchmark.lower() else f"{rec.benchmark} (setting {setting})"
        if protocol != "crosshoi":
            return [], (f"{shown}: results scored with --protocol {protocol}; every published "
                        "multiple-choice number is the released script's counting (--protocol crosshoi), "
                        "so none is placed beside it")
        hit = [p for p in same if p.setting == setting]
        return hit, None if hit else f"{shown}: the papers publish no setting-{setting} numbers"
    if isinstance(r, VCOCOResult):
        return [p for p in same if p.metric == "role_ap"], None
    if isinstance(r, HICOMapResult):
        hit = [p for p in same if p.metric == "mAP" and p.classes is not None
               and _map_value(r, p.classes) is not None and p.setting == setting]
        if hit:
            return hit, None
        want = sorted({str(p.classes) for p in same})
        return [], (f"{rec.benchmark} ({rec.model}): the published mAP is over the {'/'.join(want)} classes, "
                    f"this result's is over {r.headline} (score with the matching --classes)")
    return [], None


def _published_record(p: PublishedRow, user_benchmark: str, like: ResultRecord[Any]) -> ResultRecord[Any] | None:
    """A published number as a record under the user's benchmark name (so it lands in the same
    rows, columns and bars); None for V-COCO (table only)."""
    v = float(p.value) / 100.0  # type: ignore[arg-type]
    extra: dict[str, Any] = {"published": p.source}
    if p.metric == "mAP":
        classes = str(p.classes)
        res: Any = HICOMapResult(full=v if classes == "full" else math.nan,
                                 subsets={} if classes == "full" else {classes: v},
                                 headline=classes, protocol=_UNSTATED,
                                 # the same class list as the result it joins, so both read alike
                                 classes=like.result.classes if classes == like.result.headline else None)
    else:  # multiple choice: gathered per model in _mcq_records; V-COCO: the comparison table only
        return None
    return ResultRecord(res, _tag(p), user_benchmark, extra)


def _mcq_records(rows: Sequence[PublishedRow], user_benchmark: str, setting: str) -> list[ResultRecord[Any]]:
    """One MCQResult per published model of a setting (metrics the paper leaves out are NaN)."""
    by_model: dict[str, dict[str, float]] = {}
    for p in rows:
        by_model.setdefault(_tag(p), {})[p.metric] = float(p.value) / 100.0  # type: ignore[arg-type]
    out = []
    for model, m in by_model.items():
        res = MCQResult(**{k: m.get(k, math.nan) for k in MCQ_METRIC_NAMES}, protocol="crosshoi",
                        zero_division=1.0, n_questions=None, n_images=None, n_classes=None, n_answered=None,
                        n_missing=None, n_empty=None, n_out_of_choice=None, n_unknown_answers=None)
        out.append(ResultRecord(res, model, user_benchmark, {"setting": int(setting[0]),
                                                             "published": next(
                                                                 p.source for p in rows if _tag(p) == model)}))
    return out


def _user_value(rec: ResultRecord[Any], p: PublishedRow) -> float | None:
    r = rec.result
    if isinstance(r, HICOMapResult):
        return _map_value(r, str(p.classes))
    if isinstance(r, MCQResult):
        return float(getattr(r, p.metric))
    if isinstance(r, VCOCOResult):
        s = 1 if 1 in r.scenarios else 2
        return float(r.role_map(s))
    return None


def compare_published(records: Sequence[ResultRecord[Any]],
                      rows: Sequence[PublishedRow] | None = None) -> PublishedComparison:
    """Match every result against the published rows (default: those shipped with hoibench)."""
    rows = published_results() if rows is None else rows
    out = PublishedComparison()
    placed: set[tuple[str, str, str]] = set()  # (published tag, metric, user benchmark)
    seen_rows: set[tuple[str, str, str, str]] = set()
    for rec in records:
        if not isinstance(rec.result, (HICOMapResult, MCQResult, VCOCOResult)):
            continue
        hit, why = _match(rec, rows)
        r = rec.result
        if isinstance(r, HICOMapResult) and "unseen" in r.subsets and canonical_benchmark(rec.benchmark)[0] == "hico-det":
            out.notes.append(f"{rec.benchmark} ({rec.model}): scored with a zero-shot class split; name its benchmark "
                             "hico-det-rf-uc (eval hico --benchmark hico-det-rf-uc) to set its unseen mAP beside "
                             "B-RIGHT Table 3's RF-UC column.")
        if why:
            out.notes.append(why + ".")
            continue
        for p in hit:
            user = _user_value(rec, p)
            key = (rec.model, rec.benchmark, p.metric, str(p.classes))
            if key not in seen_rows and user is not None and not math.isnan(user):
                seen_rows.add(key)
                out.rows.append((rec.benchmark, p.part, p.metric, p.classes or p.setting, rec.model,
                                 100.0 * user, "this report", ""))
            if (_tag(p), p.metric, rec.benchmark) in placed:
                continue
            placed.add((_tag(p), p.metric, rec.benchmark))
            out.rows.append((rec.benchmark, p.part, p.metric, p.classes or p.setting, _tag(p), p.value,
                             p.source, p.note))
        if isinstance(rec.result, MCQResult):
            new = [p for p in hit if not any(r.model == _tag(p) and r.benchmark == rec.benchmark
                                             for r in out.records)]
            out.records += _mcq_records(new, rec.benchmark, hit[0].setting) if new else []
        else:
            for p in hit:
                if any(r.model == _tag(p) and r.benchmark == rec.benchmark for r in out.records):
                    continue
                made = _published_record(p, rec.benchmark, rec)
                if made is not None:
                    out.records.append(made)
    if any(isinstance(r.result, VCOCOResult) for r in records) and out.rows:
        out.notes.append("V-COCO: the SG paper prints 'mAP' without naming the role-AP scenario; yours is "
                         "scenario 1 where the result has it, else 2.")
    if any(isinstance(r.result, HICOMapResult) for r in out.records):
        out.notes.append("mAP: the papers score each model with its own evaluation code and do not name "
                         "it (protocol 'as published'); hoibench cannot check that your test files are the "
                         "released ones (e.g. the demo builds its splits from the bundled annotations).")
    if any(isinstance(r.result, MCQResult) for r in out.records):
        out.notes.append("Multiple choice: the published numbers are on the released question set; setting-3 "
                         "rows of Table 6 (person boxes from DETR) are listed below but never placed, as "
                         "results do not record where setting-3 person boxes came from.")
    out.notes = list(dict.fromkeys(out.notes))
    return out


def comparison_table(comp: PublishedComparison) -> Table:
    """Your results and the comparable published rows, grouped by benchmark and metric."""
    rows = sorted(comp.rows, key=lambda t: (t[0], t[1], t[2], str(t[3]), t[6] != "this report"))
    return Table("published-comparison", "Your results beside the published ones (%)",
                 ("benchmark", "part", "metric", "classes / setting", "model", "value", "source", "note"),
                 tuple(rows), caption="Rows of one benchmark, part, metric and class set or setting are "
                                      "comparable; 'this report' marks your results.")


def published_tables(rows: Sequence[PublishedRow] | None = None) -> list[Table]:
    """Every shipped published row, one table per source table (as printed, percent)."""
    rows = published_results() if rows is None else rows
    out = []
    for src in dict.fromkeys(p.source for p in rows):
        rs = [p for p in rows if p.source == src]
        paper, table = rs[0].paper, rs[0].table
        out.append(Table(f"published-{_PAPER_SHORT[paper].lower()}-{table.lower().replace(' ', '')}",
                         f"Published: {src}",
                         ("model", "benchmark", "part", "metric", "classes", "setting", "protocol", "value",
                          "printed row", "note"),
                         tuple((p.model, p.benchmark, p.part, p.metric, p.classes, p.setting, p.protocol,
                                p.value, p.row, p.note + (f" rank {p.rank}" if p.rank else ""))
                               for p in rs),
                         caption="As printed (percent); n/a: the paper prints a dash (see note)."))
    return out
