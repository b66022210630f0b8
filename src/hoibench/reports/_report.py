"""A report: titled sections of text, tables and plots, written as Markdown, CSV, JSON and one
self-contained HTML page (plots embedded as base64 PNG, no external resources).

Output layout of :meth:`Report.write`::

    DIR/report.html        open in any browser; works offline and when mailed around
    DIR/report.md          the same content, figures linked from figures/
    DIR/report.json        every table with raw numbers, plus the report's metadata
    DIR/tables/<name>.csv  one CSV per table, full precision
    DIR/figures/<name>.png one PNG per plot
"""

from __future__ import annotations

import base64
import html
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hoibench._exceptions import ValidationError
from hoibench._io import atomic_write_bytes, dumps_json, ensure_dir
from hoibench.reports._figures import Figure
from hoibench.reports._tables import Table

__all__ = ["Report", "ReportFiles", "Section"]


@dataclass
class Section:
    """One part of a report: a heading, a short text, tables and figures (in that order)."""

    title: str
    text: str = ""
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)

    @property
    def anchor(self) -> str:
        return "".join(c if c.isalnum() else "-" for c in self.title.lower()).strip("-")


@dataclass(frozen=True)
class ReportFiles:
    """Paths :meth:`Report.write` produced."""

    html: Path
    markdown: Path
    json: Path
    tables: tuple[Path, ...]
    figures: tuple[Path, ...]


_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1100px;margin:2em auto;
padding:0 1em;color:#222;line-height:1.45}
h1{border-bottom:2px solid #08519c;padding-bottom:.2em}h2{margin-top:2em;color:#08519c}
table{border-collapse:collapse;margin:.6em 0 1.4em;font-size:.9em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left}td.num{text-align:right}
th{background:#eef3f8}
tbody tr:nth-child(even){background:#fafafa}
figure{margin:1em 0 2em}figure img{max-width:100%;height:auto;border:1px solid #eee}
.table-wrap{max-width:100%;overflow-x:auto}
figcaption,.caption{color:#555;font-size:.88em}.meta{color:#555;font-size:.85em}
nav ul{columns:2}
"""


class Report:
    """A report under construction.

    Parameters
    ----------
    title:
        Page title.
    intro:
        A paragraph under the title.
    meta:
        Provenance shown at the top and stored in ``report.json`` (command, seeds, timings).
    """

    def __init__(self, *, title: str, intro: str = "", meta: dict[str, Any] | None = None) -> None:
        self.title = title
        self.intro = intro
        self.meta: dict[str, Any] = dict(meta or {})
        self.sections: list[Section] = []

    def add_section(self, title: str, text: str = "", *, tables: list[Table] | None = None,
                    figures: list[Figure] | None = None) -> Section:
        """Append a section and return it (tables and figures can still be appended to it)."""
        section = Section(title, text, list(tables or []), list(figures or []))
        self.sections.append(section)
        return section

    @property
    def tables(self) -> list[Table]:
        return [t for s in self.sections for t in s.tables]

    @property
    def figures(self) -> list[Figure]:
        return [f for s in self.sections for f in s.figures]

    def _check_names(self) -> None:
        for kind, items in (("table", self.tables), ("figure", self.figures)):
            names = [x.name for x in items]
            dup = sorted({n for n in names if names.count(n) > 1})
            if dup:
                raise ValidationError(f"report {self.title!r}: duplicate {kind} names {dup}")

    # ------------------------------------------------------------------ renderers
    def to_markdown(self) -> str:
        """Markdown with tables inline and figures linked as ``figures/<name>.png``."""
        out = [f"# {self.title}\n"]
        if self.intro:
            out.append(self.intro + "\n")
        if self.meta:
            out.append("\n".join(f"- {k}: {_meta_text(v)}" for k, v in self.meta.items()) + "\n")
        for s in self.sections:
            out.append(f"## {s.title}\n")
            if s.text:
                out.append(s.text + "\n")
            for t in s.tables:
                out.append(f"### {t.title}\n")
                if t.caption:
                    out.append(t.caption + "\n")
                out.append(t.to_markdown())
            for f in s.figures:
                out.append(f"![{f.title}](figures/{f.name}.png)\n")
                if f.caption:
                    out.append(f"*{f.caption}*\n")
        return "\n".join(out)

    def to_html(self) -> str:
        """One self-contained HTML page: inline CSS, tables, PNGs as base64 data URIs."""
        self._check_names()
        e = html.escape
        parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
                 '<meta name="viewport" content="width=device-width, initial-scale=1">',
                 f"<title>{e(self.title)}</title><style>{_CSS}</style></head><body>",
                 f"<h1>{e(self.title)}</h1>"]
        if self.intro:
            parts.append(f"<p>{e(self.intro)}</p>")
        if self.meta:
            parts.append('<ul class="meta">' + "".join(
                f"<li><b>{e(str(k))}</b>: {e(_meta_text(v))}</li>" for k, v in self.meta.items()
            ) + "</ul>")
        if len(self.sections) > 1:
            parts.append("<nav><ul>" + "".join(
                f'<li><a href="#{e(s.anchor)}">{e(s.title)}</a></li>' for s in self.sections
            ) + "</ul></nav>")
        for s in self.sections:
            parts.append(f'<section id="{e(s.anchor)}"><h2>{e(s.title)}</h2>')
            if s.text:
                parts.append(f"<p>{e(s.text)}</p>")
            for t in s.tables:
                parts.append(f"<h3>{e(t.title)}</h3>")
                if t.caption:
                    parts.append(f'<p class="caption">{e(t.caption)}</p>')
                parts.append(f'<div class="table-wrap">{t.to_html()}</div>')
            for f in s.figures:
                data = base64.b64encode(f.png).decode("ascii")
                w, h = f.display_size
                colors = e(json.dumps(dict(f.colors), sort_keys=True, ensure_ascii=False))
                parts.append(
                    f'<figure data-figure="{e(f.name)}" data-colors="{colors}"><img alt="{e(f.title)}" '
                    f'width="{w}" height="{h}" src="data:image/png;base64,{data}">'
                    f"<figcaption><b>{e(f.title)}</b>{'. ' + e(f.caption) if f.caption else ''}"
                    "</figcaption></figure>"
                )
            parts.append("</section>")
        parts.append("</body></html>\n")
        return "\n".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready content: metadata, and per section its tables (raw numbers) and figure names."""
        return {
            "kind": "hoibench_report",
            "title": self.title,
            "meta": self.meta,
            "sections": [
                {"title": s.title, "text": s.text, "tables": [t.to_dict() for t in s.tables],
                 "figures": [{"name": f.name, "title": f.title, "caption": f.caption,
                              "file": f"figures/{f.name}.png", "colors": dict(f.colors)}
                             for f in s.figures]}
                for s in self.sections
            ],
        }

    def write(self, out_dir: str | Path) -> ReportFiles:
        """Write every output atomically under ``out_dir`` (created if needed)."""
        self._check_names()
        out = ensure_dir(out_dir)
        tables, figures = [], []
        for t in self.tables:
            p = out / "tables" / f"{t.name}.csv"
            atomic_write_bytes(p, t.to_csv().encode())
            tables.append(p)
        for f in self.figures:
            p = out / "figures" / f"{f.name}.png"
            atomic_write_bytes(p, f.png)
            figures.append(p)
        md = out / "report.md"
        atomic_write_bytes(md, self.to_markdown().encode())
        js = out / "report.json"
        atomic_write_bytes(js, dumps_json(self.to_dict(), indent=True))
        page = out / "report.html"
        atomic_write_bytes(page, self.to_html().encode())
        return ReportFiles(page, md, js, tuple(tables), tuple(figures))


def _meta_text(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return ", ".join(str(x) for x in v)
    if isinstance(v, dict):
        return ", ".join(f"{k}={x}" for k, x in v.items())
    return str(v)
