"""The one progress bar of hoibench: rich, on stderr (stdout may carry ``--json -`` output)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["make_progress"]


def make_progress(
    *,
    description: str = "{task.description}",
    transient: bool = False,
    eta: bool = False,
    extra: Sequence[str] = (),
    trailing: Sequence[str] = (),
) -> Any:
    """A ``rich.progress.Progress`` with description, bar, done/total and elapsed time.

    ``eta`` adds the estimated time remaining; ``extra`` and ``trailing`` are text templates (e.g.
    ``"{task.fields[rate]}"``) shown after the counts and at the end. Imported lazily, so commands
    that never show progress do not import rich's progress machinery.
    """
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns: list[Any] = [TextColumn(description), BarColumn(), MofNCompleteColumn()]
    columns += [TextColumn(t) for t in extra]
    columns.append(TimeElapsedColumn())
    if eta:
        columns += [TextColumn("ETA"), TimeRemainingColumn()]
    columns += [TextColumn(t) for t in trailing]
    return Progress(*columns, transient=transient, console=Console(stderr=True))
