"""Tables of a report, rendered to Markdown, CSV, JSON and HTML from one record.

A :class:`Table` keeps raw cell values (numbers stay numbers) so that the CSV and JSON outputs
carry full precision while Markdown and HTML show rounded figures.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hoibench._exceptions import ValidationError
from hoibench._io import csv_text
from hoibench.reports._style import NOT_AVAILABLE

__all__ = ["Table", "format_cell"]

_SLUG = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


def format_cell(value: Any, decimals: int = 2) -> str:
    """Human-readable text of a cell: numbers with thousands separators (floats rounded), and
    undefined values (None, NaN) as "n/a", never as a number a reader could take for a score."""
    if value is None:
        return NOT_AVAILABLE
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return NOT_AVAILABLE
        return f"{value:,.{decimals}f}"
    if hasattr(value, "item") and callable(value.item):  # numpy scalar
        return format_cell(value.item(), decimals)
    return str(value)


def _raw(value: Any) -> Any:
    """JSON/CSV value of a cell: numpy scalars unwrapped, NaN as None."""
    if hasattr(value, "item") and callable(value.item):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


@dataclass(frozen=True)
class Table:
    """A titled table of a report.

    Parameters
    ----------
    name:
        File-name stem (lower case, digits, ``_.-``): ``tables/<name>.csv``.
    title:
        Heading shown above the table.
    columns:
        Column headers.
    rows:
        Cell values, one sequence per row, as many cells as columns.
    caption:
        One or two sentences saying what the table shows and where the numbers come from.
    decimals:
        Digits after the point in Markdown and HTML (CSV and JSON keep full precision).
    """

    name: str
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    caption: str = ""
    decimals: int = 2
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if not _SLUG.match(self.name):
            raise ValidationError(f"table name must match {_SLUG.pattern}; got {self.name!r}")
        object.__setattr__(self, "columns", tuple(str(c) for c in self.columns))
        rows = tuple(tuple(r) for r in self.rows)
        for i, r in enumerate(rows):
            if len(r) != len(self.columns):
                raise ValidationError(
                    f"table {self.name!r}: row {i} has {len(r)} cells for {len(self.columns)} columns"
                )
        object.__setattr__(self, "rows", rows)

    @classmethod
    def from_records(cls, name: str, title: str, records: Sequence[dict[str, Any]], *,
                     columns: Sequence[str] | None = None, caption: str = "",
                     decimals: int = 2) -> Table:
        """A table from dicts; columns default to the keys in first-seen order."""
        if columns is None:
            seen: dict[str, None] = {}
            for rec in records:
                seen.update(dict.fromkeys(rec))
            columns = list(seen)
        rows = tuple(tuple(rec.get(c) for c in columns) for rec in records)
        return cls(name=name, title=title, columns=tuple(columns), rows=rows, caption=caption,
                   decimals=decimals)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Table:
        """Inverse of :meth:`to_dict`."""
        return cls(name=d["name"], title=d["title"], columns=tuple(d["columns"]),
                   rows=tuple(tuple(r) for r in d["rows"]), caption=d.get("caption", ""),
                   decimals=int(d.get("decimals", 2)))

    def column(self, name: str) -> list[Any]:
        """The cells of one column."""
        try:
            j = self.columns.index(name)
        except ValueError:
            raise ValidationError(f"table {self.name!r} has no column {name!r}; "
                                  f"columns: {list(self.columns)}") from None
        return [r[j] for r in self.rows]

    def text_rows(self) -> list[list[str]]:
        """Rows as the rounded strings Markdown and HTML show."""
        return [[format_cell(v, self.decimals) for v in r] for r in self.rows]

    def to_markdown(self) -> str:
        """A GitHub-flavoured Markdown table (pipes in cells escaped)."""
        def esc(s: str) -> str:
            return s.replace("|", "\\|").replace("\n", " ")

        lines = ["| " + " | ".join(esc(c) for c in self.columns) + " |",
                 "|" + "|".join(" --- " for _ in self.columns) + "|"]
        lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in self.text_rows()]
        return "\n".join(lines) + "\n"

    def to_csv(self) -> str:
        """CSV with full-precision numbers; missing values are empty cells."""
        return csv_text(self.columns, ([_raw(x) for x in r] for r in self.rows))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready record: name, title, caption, columns and raw rows."""
        return {"name": self.name, "title": self.title, "caption": self.caption,
                "decimals": self.decimals, "columns": list(self.columns),
                "rows": [[_raw(v) for v in r] for r in self.rows]}

    def to_html(self) -> str:
        """An HTML ``<table>`` (escaped) with a ``data-table`` attribute naming it."""
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        def cell(raw: Any, text: str) -> str:
            v = _raw(raw)
            num = isinstance(v, (int, float)) and not isinstance(v, bool)
            return f'<td class="{"num" if num else "text"}">{html.escape(text)}</td>'

        body = "".join(
            "<tr>" + "".join(cell(r, t) for r, t in zip(raw_row, row)) + "</tr>"
            for raw_row, row in zip(self.rows, self.text_rows())
        )
        return (f'<table data-table="{html.escape(self.name)}" data-rows="{len(self.rows)}">'
                f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
