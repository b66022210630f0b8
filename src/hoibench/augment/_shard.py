"""Spreading a run over GPUs and machines with ``accelerate`` (see ``docs/augment.md`` for why
``accelerate`` rather than Ray Data).

The unit of work is a class: its attempts form a chain (a rejected image's paraphrase is the next
prompt), so one class never spans two processes. Classes go to shards by longest-processing-time
scheduling on their deficits, a pure function of the class list and the number of shards; every
shard appends to its own manifest in the shared output folder, and the main process merges them.
"""

from __future__ import annotations

import heapq
import os
import re
from collections.abc import Callable, Sequence
from typing import Any

from hoibench._exceptions import ConfigError, MissingExtraError
from hoibench.augment._targets import TargetClass

__all__ = ["parse_shard", "run_sharded", "shard_targets"]


def shard_targets(targets: Sequence[TargetClass], n_shards: int) -> list[list[TargetClass]]:
    """Split classes over ``n_shards`` so the largest total deficit of a shard is small: classes
    by deficit (largest first, ties by HOI id) each go to the least loaded shard (ties: lowest
    index). Within a shard classes keep the input order."""
    if n_shards < 1:
        raise ConfigError(f"the number of shards must be >= 1; got {n_shards}")
    heap = [(0, s) for s in range(n_shards)]
    owner: dict[int, int] = {}
    for t in sorted(targets, key=lambda t: (-t.need, t.hoi)):
        load, s = heapq.heappop(heap)
        owner[t.hoi] = s
        heapq.heappush(heap, (load + max(t.need, 1), s))
    out: list[list[TargetClass]] = [[] for _ in range(n_shards)]
    for t in targets:
        out[owner[t.hoi]].append(t)
    return out


_SHARD = re.compile(r"^(\d+)/(\d+)$")


def parse_shard(spec: str | None) -> tuple[int, int] | None:
    """``"i/n"`` → ``(i, n)`` (0-based ``i``); ``None`` or ``"auto"`` → ``None`` (ask accelerate)."""
    if spec is None or spec == "auto":
        return None
    m = _SHARD.match(spec.strip())
    if m is None:
        raise ConfigError(f"shard must look like 'I/N' (0 <= I < N) or 'auto'; got {spec!r}")
    i, n = int(m.group(1)), int(m.group(2))
    if not 0 <= i < n:
        raise ConfigError(f"shard index must be in 0..{n - 1}; got {spec!r}")
    return i, n


def _accelerate_state() -> Any:
    """``accelerate``'s process state when launched with ``accelerate launch`` (or torchrun),
    else ``None`` (a plain single process needs neither torch nor accelerate)."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return None
    try:
        from accelerate import PartialState
    except ImportError:
        raise MissingExtraError("accelerate", "augment", "multi-GPU runs") from None
    return PartialState()


def run_sharded(work: Callable[[tuple[int, int], str | None], Any], finish: Callable[[], Any], *,
                shard: tuple[int, int] | None = None) -> Any:
    """Run ``work((index, count), device)`` for this process's shard, then ``finish()`` on the main
    process once every shard is done.

    ``shard`` fixes the shard by hand (one job per machine or GPU from a scheduler; run
    ``hoibench augment collect`` afterwards). Without it, ``accelerate``'s process index and count
    are used and processes wait for each other before the main one merges.
    """
    if shard is not None:
        work(shard, None)
        return finish()
    state = _accelerate_state()
    if state is None:
        work((0, 1), None)
        return finish()
    work((state.process_index, state.num_processes), str(state.device))
    state.wait_for_everyone()
    return finish() if state.is_main_process else None
