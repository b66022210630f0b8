"""Runs on several machines: ``--shard I/N`` keeps a deterministic share of the questions (all
questions of one image in one shard, so that each image is prepared and prefix-cached on one
machine only), and :func:`merge_answers` joins the shards' answers files into the one file an
unsharded run would have written (headers must agree; each shard exactly once)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hoibench._exceptions import ConfigError
from hoibench.data import MCAnswer, MCQuestion
from hoibench.formats.questions import read_answers, write_answers

__all__ = ["merge_answers", "parse_shard", "shard_questions"]

_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")
#: header keys that may differ between shards (the shard itself, the version that wrote it)
_PER_SHARD = frozenset({"shard", "hoibench"})


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` → ``(I, N)`` with ``0 <= I < N``."""
    m = _SHARD.match(text)
    if m is None:
        raise ConfigError(f"--shard must be I/N (e.g. 0/2); got {text!r}")
    i, n = int(m.group(1)), int(m.group(2))
    if n < 1 or not 0 <= i < n:
        raise ConfigError(f"--shard must be I/N with 0 <= I < N; got {text!r}")
    return i, n


def _shard_of(file_name: str, n: int) -> int:
    return int.from_bytes(hashlib.sha256(file_name.encode("utf-8")).digest()[:8], "big") % n


def shard_questions(questions: Sequence[MCQuestion], index: int, count: int) -> list[MCQuestion]:
    """The questions of shard ``index`` of ``count``, in file order (by a hash of the image name:
    the same on every machine, whatever the order of the file)."""
    return [q for q in questions if _shard_of(q.file_name, count) == index]


def merge_answers(paths: Sequence[str | Path], out: str | Path, *,
                  questions: Sequence[MCQuestion] | None = None) -> dict[str, Any]:
    """Join the answers files of shards ``0/N`` … ``N-1/N`` of one run into ``out`` (atomic).

    Every header must equal the others except for ``shard``; the merged header is theirs without
    ``shard`` (what the unsharded run writes). With ``questions`` the answers follow their order
    and every question must have an answer. Returns counts for the summary."""
    if not paths:
        raise ConfigError("merge needs at least one answers file")
    headers: list[dict[str, Any]] = []
    sets = []
    for p in paths:
        s = read_answers(p)
        if not s.header:
            raise ConfigError(f"{p}: has no answers header")
        headers.append(dict(s.header))
        sets.append(s)
    shards = []
    for p, h in zip(paths, headers):
        if "shard" not in h:
            raise ConfigError(f"{p}: is not a shard (its header has no 'shard'; run with --shard I/N)")
        shards.append(parse_shard(str(h["shard"])))
    n = shards[0][1]
    for p, (i, k) in zip(paths, shards):
        if k != n:
            raise ConfigError(f"{p}: is shard {i}/{k}, the first file is one of {n}")
    seen: dict[int, str | Path] = {}
    for p, (i, _) in zip(paths, shards):
        if i in seen:
            raise ConfigError(f"{p}: shard {i}/{n} is given twice (also {seen[i]})")
        seen[i] = p
    missing = sorted(set(range(n)) - set(seen))
    if missing:
        raise ConfigError(f"shard {missing[0]}/{n} is missing ({len(missing)} of {n} shards)")
    base = {k: v for k, v in headers[0].items() if k not in _PER_SHARD}
    for p, h in zip(paths[1:], headers[1:]):
        other = {k: v for k, v in h.items() if k not in _PER_SHARD}
        diff = sorted(k for k in set(base) | set(other) if base.get(k) != other.get(k))
        if diff:
            k = diff[0]
            raise ConfigError(f"{p}: its header differs from {paths[0]}'s ({k}: {other.get(k)!r} there, "
                              f"{base.get(k)!r} in the first); shards of one run only")
    merged: dict[str, MCAnswer] = {}
    owner: dict[str, str | Path] = {}
    for p, s in sorted(zip(paths, sets), key=lambda x: parse_shard(str(x[1].header["shard"]))[0]):
        for a in s:
            if a.question_id in merged:
                raise ConfigError(f"{p}: question {a.question_id!r} is also answered in {owner[a.question_id]}")
            merged[a.question_id] = a
            owner[a.question_id] = p
    if questions is not None:
        absent = [q.id for q in questions if q.id not in merged]
        if absent:
            raise ConfigError(f"{len(absent)} question(s) have no answer in any shard, e.g. {absent[0]!r}")
        order = [merged[q.id] for q in questions] + [
            a for i, a in merged.items() if i not in {q.id for q in questions}]
    else:
        order = list(merged.values())
    header = {**base, "hoibench": headers[0].get("hoibench")}
    write_answers(out, order, header=header)
    statuses: dict[str, int] = {}
    for a in order:
        statuses[a.status] = statuses.get(a.status, 0) + 1
    return {"out": str(out), "shards": n, "answers": len(order), "statuses": statuses}
