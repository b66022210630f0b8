"""A verified release folder as a Hugging Face dataset folder: one JSONL file per benchmark split
under ``data/`` and a dataset card (``README.md``) whose ``configs:`` block names each benchmark,
so ``datasets.load_dataset(DIR, "mcq-benchmark")`` works (locally or after uploading DIR).

Rows are the benchmark's records unchanged: one image record of the PPDM/QPIC files a line (the
JSON array written one element a line), one question of a question file a line without the
header line (which would load as a malformed row); a question's ``meta`` (free-form provenance
whose keys differ between questions) is written as a JSON string, ``meta_json``, so that one
Arrow schema holds every row. The side files (``stats.json``, ``test_combinations.json``, ...)
are copied under ``extra/``. Only annotations are exported, never images.
"""

from __future__ import annotations

import json
import os
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

from hoibench._exceptions import ConfigError
from hoibench._io import atomic_write, atomic_write_bytes, dumps_json, ensure_dir, read_bytes
from hoibench.benchmarks._release import (
    QUESTIONS_FILE,
    RELEASE,
    load_manifest,
    select_benchmarks,
    verify_release,
)

__all__ = ["export_hf", "hf_config_name"]

#: data file of each split, by benchmark group (PPDM/QPIC layout; questions JSONL)
SPLIT_FILES = {
    "sg": {"train": "trainval_hico.json", "test": "test_hico.json"},
    "b-right": {"train": "trainval_hico.json", "test": "test_hico.json", "zero_shot": "test_zero_shot_hico.json"},
    "zero-shot": {"train": "trainval_hico.json", "test": "test_hico.json"},
    "mcq/benchmark": {"test": QUESTIONS_FILE},
    "mcq/train": {"train": QUESTIONS_FILE},
}

LICENCE_TEXT = """\
**Annotations only.** This folder holds no image. The annotations are derived from the HICO-DET
annotations (MIT: fredzzhang/hicodet, Copyright (c) Frederic Zhang; DirtyHarryLYL/HAKE, MIT) by
hoibench (MIT), with gen-vlkt's zero-shot class lists (MIT). The HICO-DET images are for
non-commercial research use only (see the HICO-DET website); obtain them from their source and
point the `file_name` of each row at them."""


#: the licence file the card's ``license_link`` names (the Hub wants a link or the text for ``other``)
LICENCE_FILE = "LICENSE.md"

#: the Hub's size bins (``size_categories``), upper bounds exclusive
_SIZE_BINS = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
              (10_000_000, "1M<n<10M"))


def _size_category(rows: int) -> str:
    return next((label for bound, label in _SIZE_BINS if rows < bound), "10M<n<100M")


def _task_categories(configs: list[Any]) -> list[str]:
    """The Hub task of each benchmark: HOI detection splits are object detection (boxes and
    classes); the multiple-choice questions are visual question answering, multiple choice."""
    tasks: list[str] = []
    for _, b, _ in configs:
        for t in (("visual-question-answering", "multiple-choice") if b.name.startswith("mcq")
                  else ("object-detection",)):
            if t not in tasks:
                tasks.append(t)
    return tasks


def _licence_file() -> str:
    """``LICENSE.md`` of the export: the annotations-only notice and the bundled data's licences."""
    bundled = resources.files("hoibench._bundled").joinpath("LICENSES.md").read_text(encoding="utf-8")
    return f"# Licence\n\n{LICENCE_TEXT}\n\n{bundled}"


def hf_config_name(benchmark: str) -> str:
    """``sg/hico-det-sg1`` → ``sg-hico-det-sg1`` (a config name of the card)."""
    return benchmark.replace("/", "-")


def _split_files(name: str) -> dict[str, str]:
    group = name if name in SPLIT_FILES else name.split("/")[0]
    return SPLIT_FILES[group]


def _write_rows(src: Path, dest: Path) -> int:
    """``src`` (a JSON array, or questions JSONL with its header line) as JSONL rows."""
    data = read_bytes(src)
    n = 0
    with atomic_write(dest, "wb") as fh:
        if src.suffix == ".jsonl":
            for i, line in enumerate(data.splitlines()):
                if not line.strip():
                    continue
                obj = json.loads(line)
                if i == 0 and "header" in obj:
                    continue
                obj["meta_json"] = json.dumps(obj.pop("meta", {}), sort_keys=True)
                fh.write(dumps_json(obj) + b"\n")
                n += 1
        else:
            rows = json.loads(data)
            if not isinstance(rows, list):
                raise ConfigError(f"{src}: expected a JSON array of image records")
            for row in rows:
                fh.write(dumps_json(row) + b"\n")
                n += 1
    return n


def export_hf(release_dir: str | os.PathLike[str], out: str | os.PathLike[str],
              names: list[str] | None = None, *, manifest: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write the benchmarks ``names`` (default: all) of the verified ``release_dir`` as a Hugging
    Face dataset folder ``out``; returns ``{config: {split: rows}}``.

    The release folder is checked against ``manifest`` (default: the shipped one) first: an export
    is of the frozen bytes or not at all.
    """
    manifest = load_manifest() if manifest is None else manifest
    chosen = select_benchmarks(names)
    problems = verify_release(release_dir, [b.name for b in chosen], manifest=manifest)
    if problems:
        raise ConfigError(f"{release_dir}: {len(problems)} file(s) differ from release {manifest['release']}, e.g. "
                          f"{problems[0].line()}; run `hoibench verify {release_dir}`")
    root, dest = Path(release_dir), ensure_dir(out)
    counts: dict[str, dict[str, int]] = {}
    configs = []
    for b in chosen:
        config = hf_config_name(b.name)
        files = manifest["benchmarks"][b.name]["files"]
        splits = {s: f for s, f in _split_files(b.name).items() if f in files}
        counts[config] = {}
        data_files = []
        for split, fname in splits.items():
            rel = f"data/{config}/{split}.jsonl"
            ensure_dir((dest / rel).parent)
            counts[config][split] = _write_rows(root / b.name / fname, dest / rel)
            data_files.append((split, rel))
        for fname in files:
            if fname not in splits.values():
                target = dest / "extra" / config / fname
                ensure_dir(target.parent)
                shutil.copyfile(root / b.name / fname, target)
        configs.append((config, b, data_files))
    atomic_write_bytes(dest / LICENCE_FILE, _licence_file().encode())
    atomic_write_bytes(dest / "README.md", _card(configs, counts, manifest).encode())
    return counts


def _card(configs: list[Any], counts: dict[str, dict[str, int]], manifest: dict[str, Any]) -> str:
    total = sum(n for splits in counts.values() for n in splits.values())
    lines = ["---", "license: other", "license_name: annotations-only", f"license_link: {LICENCE_FILE}",
             "language:", "- en", "task_categories:", *(f"- {t}" for t in _task_categories(configs)),
             "size_categories:", f"- {_size_category(total)}",
             "pretty_name: hoibench benchmarks " + RELEASE,
             "tags:", "- human-object-interaction", "- hoi-detection", "- benchmark", "configs:"]
    for config, _, data_files in configs:
        lines.append(f"- config_name: {config}")
        lines.append("  data_files:")
        for split, rel in data_files:
            lines += [f"  - split: {split}", f"    path: {rel}"]
    lines += ["---", "", f"# hoibench benchmarks, release {RELEASE}", "",
              f"Frozen builds of the benchmarks defined by hoibench {manifest.get('hoibench')}, from its bundled "
              "annotations with fixed seeds. Rebuild and check them with `hoibench release build DIR` and "
              "`hoibench verify DIR` (sha256 of every file against the manifest shipped in the package).", "",
              "| config | what | splits (rows) | rebuilt by |", "| --- | --- | --- | --- |"]
    for config, b, _ in configs:
        rows = ", ".join(f"{s} ({n:,})" for s, n in counts[config].items())
        lines.append(f"| `{config}` | {b.description} | {rows} | `{b.command}` |")
    lines += ["", "Rows: one image of the PPDM/QPIC layout a line (`file_name`, `width`, `height`, "
              "`annotations`: `bbox` x1, y1, x2, y2 in pixels as the benchmark's files write them, and COCO "
              "`category_id`; `hoi_annotation`), or one "
              "multiple-choice question a line (`meta` as the JSON string `meta_json`). Side files "
              "(statistics, test combinations) are under `extra/`.", "",
              "```python", "from datasets import load_dataset",
              f"ds = load_dataset(\"path/to/this/folder\", \"{configs[0][0] if configs else 'mcq-benchmark'}\")",
              "```", "", "## Licence", "", LICENCE_TEXT, "", f"The licences of the sources: [{LICENCE_FILE}]({LICENCE_FILE}).",
              "", "## Citation", "",
              "Cite hoibench (its `CITATION.cff`, with the release) and the paper that defines the benchmark "
              "you use:", "",
              "- HICO-DET-SG: K. Takemoto, M. Yamada, T. Sasaki, H. Akima. *HICO-DET-SG and V-COCO-SG: New "
              "Data Splits for Evaluating the Systematic Generalization Performance of Human-Object "
              "Interaction Detection Models*. arXiv:2305.09948.",
              "- Multiple-choice HOI: Q. Lei, B. Wang, R. T. Tan. *CrossHOI-Bench: A Unified Benchmark for HOI "
              "Evaluation across Vision-Language Models and HOI-Specific Methods*. CVPR 2026 "
              "(arXiv:2508.18753).",
              "- B-RIGHT: Y. Jang, J. Kim, H. Kim, E. Lee, E. Kim, S. Baek, J. Yoo. *B-RIGHT: Benchmark "
              "Re-evaluation for Integrity in Generalized Human-Object Interaction Testing*. arXiv:2501.16724.",
              ""]
    return "\n".join(lines)
