"""Every ```bash``` / ```console``` / ```python``` block of README.md and docs/*.md runs here.

A page's blocks run in order in one workspace (a temporary folder), as a reader would run them,
with ``hoibench`` and ``python`` from this interpreter's environment first on PATH. The workspace
holds what the examples name but a reader brings: ``preds.json`` / ``dets.json`` (seeded noisy
detections on the bundled HICO-DET test set), ``DIR`` (a ``hoibench demo --save-predictions``
run), ``results/`` (its mAP result files), question files and blank images named as the
questions want (see ``_prepare``).

A block is marked in the markdown by an HTML comment on the line before it:

- ``<!-- docs-test: skip (why) -->``: not run; reported as skipped with that reason (a GPU,
  downloaded weights, a remote service);
- ``<!-- docs-test: usage -->``: a syntax summary; each ``hoibench ...`` line's subcommand must
  exist (``hoibench <cmd> --help`` exits 0).

Set-up lines (``make X``, ``pip install ...``) are checked, not run: the make target exists in the
Makefile, the extras exist in pyproject.toml.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from importlib.metadata import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BIN = Path(sys.executable).parent
BLOCK_TIMEOUT = 300  # seconds per block

# The multiple-choice pages' files: questions and answers named as a reader's would be
_MCQ_FILES = [
    "cp questions.jsonl bench.jsonl && cp questions.jsonl q.jsonl",
    "cp DIR/answers/prior-top1.jsonl answers.jsonl && cp DIR/answers/prior-top1.jsonl qwen.jsonl",
    "cp DIR/answers/prior-top2.jsonl internvl.jsonl && cp DIR/answers/random.jsonl ft.jsonl",
]

# What a page's reader has made or brought before its first block (run in its workspace, in order).
PAGE_SETUP: dict[str, list[str]] = {
    "docs/zero-shot-splits.md": [
        "hoibench split balanced --dataset hico-det --seed 0 --zero-shot --out bright-s0",
        "cp DIR/benchmarks/hico-det-sg1/trainval_hico.json DIR/benchmarks/hico-det-sg1/test_hico.json .",
        "printf '0\\n1\\n2\\n' > ids.txt",
    ],
    "docs/augment.md": [  # seed1.yaml: "the dry-run config with `seed: 1`"
        "python -c 'from importlib.resources import files; "
        "t = files(\"hoibench.augment\").joinpath(\"configs/dry-run.yaml\").read_text(); "
        "open(\"seed1.yaml\", \"w\").write(t.replace(\"seed: 0\", \"seed: 1\"))'",
    ],
    "docs/evaluation.md": [
        "hoibench split sg --preset hico-det-sg1 --out sg1",
        "python -c 'from hoibench.formats import read_dataset, write_predictions as w; "
        "from hoibench.testing import noisy_predictions as n; "
        "w(n(read_dataset(\"sg1/test_hico.json\"), seed=0, per_image=(20, 30)), \"pred.json\")'",
    ],
    "docs/mcq.md": _MCQ_FILES,
    "docs/mcq-harnesses.md": _MCQ_FILES,
    "docs/mcq-paper.md": _MCQ_FILES,
    "docs/b-right.md": [
        "hoibench split balanced --dataset hico-det --seed 0 --zero-shot --out bright-s0",
        "python -c 'from hoibench.formats import read_dataset, write_predictions as w; "
        "from hoibench.testing import noisy_predictions as n; "
        "w(n(read_dataset(\"bright-s0/test_hico.json\"), per_image=(0, 10)), \"detections.json\")'",
    ],
    "docs/sg-splits.md": [
        "hoibench split sg --preset hico-det-sg1 --out sg1",
        "python -c 'from hoibench.formats import read_dataset, write_predictions as w; "
        "from hoibench.testing import noisy_predictions as n; "
        "w(n(read_dataset(\"sg1/test_hico.json\"), per_image=(0, 10)), \"qpic-sg1.json\"); "
        "w(n(read_dataset(\"sg1/trainval_hico.json\"), per_image=(0, 10)), \"qpic-sg1-train.json\")'",
    ],
}

_FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>bash|console|python)[ \t]*\n(?P<code>.*?)^(?P=indent)```[ \t]*$",
                    re.M | re.S)
_MARKER = re.compile(r"<!--\s*docs-test:\s*(skip\s*\((?P<why>.*)\)|usage)\s*-->")


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository root
    line: int  # of the opening fence
    lang: str
    code: str
    marker: str | None  # None, "usage" or "skip (why)"

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def _marker_before(text: str, start: int) -> str | None:
    before = text[:start].rstrip().rsplit("\n", 1)[-1]
    m = _MARKER.search(before)
    if not m:
        return None
    return f"skip ({m.group('why')})" if m.group("why") is not None else "usage"


def extract_blocks(path: Path, root: Path = ROOT) -> list[Block]:
    """The fenced blocks of one page, in order, with their markers."""
    text = path.read_text(encoding="utf-8")
    page = path.relative_to(root).as_posix()
    blocks = []
    for m in _FENCE.finditer(text):
        blocks.append(Block(page, text.count("\n", 0, m.start()) + 1, m.group("lang"),
                            textwrap.dedent(m.group("code")), _marker_before(text, m.start())))
    return blocks


BLOCKS = [b for p in PAGES for b in extract_blocks(p)]


def _logical_lines(code: str) -> list[str]:
    """Shell lines with backslash continuations joined and comments dropped."""
    out, cur = [], ""
    for raw in code.splitlines():
        line = raw.rstrip()
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        cur += line
        stripped = cur.split(" #", 1)[0].strip() if not cur.lstrip().startswith("#") else ""
        if stripped:
            out.append(stripped)
        cur = ""
    return out


def _check_setup_line(line: str) -> bool:
    """Check a set-up line (``make X``, ``pip install``) instead of running it; False if not one."""
    words = shlex.split(line)
    if words[0] == "make":
        targets = set(re.findall(r"^([A-Za-z][\w-]*):", (ROOT / "Makefile").read_text(), re.M))
        missing = [t for t in words[1:] if not t.startswith("-") and t not in targets]
        assert not missing, f"{line!r}: no Makefile target {missing}"
        return True
    if words[:2] == ["pip", "install"]:
        extras = set(metadata("hoibench").get_all("Provides-Extra") or [])
        for w in words[2:]:
            for names in re.findall(r"\[([^\]]+)\]", w):
                missing = [n for n in names.split(",") if n.strip() not in extras]
                assert not missing, f"{line!r}: no extra {missing} in hoibench's metadata"
        return True
    return False


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["MPLBACKEND"] = "Agg"
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("PYTHONPATH", None)
    return env


def _run(argv: list[str], cwd: Path, what: str) -> None:
    try:
        proc = subprocess.run(argv, cwd=cwd, env=_env(), capture_output=True, text=True,
                              timeout=BLOCK_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{what}: still running after {BLOCK_TIMEOUT} s")
    if proc.returncode != 0:
        pytest.fail(f"{what} exited {proc.returncode}\n--- stdout (tail)\n{proc.stdout[-3000:]}"
                    f"\n--- stderr (tail)\n{proc.stderr[-3000:]}", pytrace=False)


def _server_script(lines: list[str]) -> str:
    """A shell script of ``lines``; a fake-server line runs in the background until the block ends."""
    out = ["set -eo pipefail", "cleanup() { for p in $(jobs -p); do kill \"$p\" 2>/dev/null; done; }",
           "trap cleanup EXIT"]
    for n, line in enumerate(lines):
        if "hoibench.testing.fake_server" in line:
            log = f".server{n}.log"
            out += [f"{line} > {log} 2>&1 &",
                    f"for _ in $(seq 100); do grep -q 'stop it with Ctrl-C' {log} && break; "
                    f"kill -0 $! 2>/dev/null || {{ cat {log}; exit 1; }}; sleep 0.2; done",
                    f"cat {log}"]
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def console_commands(code: str) -> list[tuple[str, list[str]]]:
    """A console transcript's ``$ `` commands (continuation lines kept) and the ``error:`` lines each prints."""
    cmds: list[tuple[str, list[str]]] = []
    continued = False
    for line in code.splitlines():
        if continued:
            cmds[-1] = (cmds[-1][0] + "\n" + line, cmds[-1][1])
        elif line.startswith("$ "):
            cmds.append((line[2:], []))
        elif cmds and line.startswith("error: "):
            cmds[-1][1].append(line)
        continued = bool(cmds) and (continued or line.startswith("$ ")) and line.rstrip().endswith("\\")
    return cmds


def _expect_error(command: str, errors: list[str]) -> str:
    """Shell lines that run ``command``, require a non-zero exit and each of ``errors`` on its stderr."""
    out = [f"if {{ {command} ; }} 2> .expected_err; then cat .expected_err >&2; "
           f"echo {shlex.quote('exited 0, the page shows an error: ' + command)} >&2; exit 1; fi",
           "cat .expected_err >&2"]
    out += [f"grep -qxF -- {shlex.quote(e)} .expected_err || "
            f"{{ echo {shlex.quote('the page shows a line the command did not print: ' + e)} >&2; exit 1; }}"
            for e in errors]
    return "\n".join(out)


def run_block(block: Block, cwd: Path) -> None:
    """Run one block in ``cwd`` (fails the test with its output when it exits non-zero)."""
    what = f"{block.id} ({block.lang})"
    if block.lang == "python" and block.marker == "usage":
        compile(block.code, what, "exec")
        return
    if block.lang == "python":
        script = cwd / f".block_{block.line}.py"
        script.write_text(block.code, encoding="utf-8")
        _run([sys.executable, script.name], cwd, what)
        return
    if block.lang == "console":  # a transcript: a command shown with an error line must print it and fail
        lines = []
        for command, errors in console_commands(block.code):
            logical = [ln for ln in _logical_lines(command) if not _check_setup_line(ln)]
            lines += [_expect_error(" ".join(logical), errors)] if errors and logical else logical
    else:
        lines = [ln for ln in _logical_lines(block.code) if not _check_setup_line(ln)]
    if block.marker == "usage":
        for line in lines:
            words = shlex.split(line.replace("[", " ").replace("]", " "))
            if words[0] != "hoibench":
                continue
            cmd = []
            for w in words[1:]:
                if not re.fullmatch(r"[a-z][a-z0-9-]*", w):
                    break
                cmd.append(w)
            _run([str(BIN / "hoibench"), *cmd, "--help"], cwd, f"{what}: hoibench {' '.join(cmd)} --help")
        return
    if lines:
        (cwd / f".block_{block.line}.sh").write_text(_server_script(lines), encoding="utf-8")
        _run(["bash", f".block_{block.line}.sh"], cwd, what)


# ---- the workspace -------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def assets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What a reader brings, built once: detections, a demo run, questions and images."""
    root = tmp_path_factory.mktemp("docs-assets")
    script = r'''
import shutil, subprocess
from pathlib import Path
import numpy as np
from PIL import Image
from hoibench.datasets import load_dataset
from hoibench.formats import read_questions, write_ppdm, write_predictions
from hoibench.testing import noisy_predictions

gt = load_dataset("hico-det:test")
write_predictions(noisy_predictions(gt, seed=0, per_image=(0, 10)), "preds.json")
subprocess.run(["hoibench", "demo", "--out", "DIR", "--save-predictions", "--quiet"], check=True)
Path("results").mkdir()
for f in sorted(Path("DIR/results/map").glob("*/*.json")):
    shutil.copy(f, Path("results") / f"{f.parent.name}-{f.name}")
shutil.copy("DIR/benchmarks/mcq/questions.jsonl", "questions.jsonl")
shutil.copy("DIR/benchmarks/hico-det-sg1/test_hico.json", "test_hico_sg1.json")
shutil.copy("DIR/benchmarks/hico-det-sg1/test_hico.json", "my_annotations.json")

# training questions of 300 training images (the full set takes a minute to build), and blank
# images of the right sizes named as the questions want
train = load_dataset("hico-det:train")
keep = np.zeros(len(train.file_names), dtype=bool)
keep[:300] = True
small = train.subset(keep)
write_ppdm(small, "trainval_small.json")
subprocess.run(["hoibench", "mcq", "build", "--dataset", "trainval_small.json", "--split", "train",
                "--out", "train.jsonl"], check=True, capture_output=True)
Path("train2015").mkdir()
for name in sorted({q.file_name for q in read_questions("train.jsonl")}):
    im = small.image(small.index_of(name))
    Image.new("RGB", (im.width, im.height), "gray").save(Path("train2015") / name, quality=50)
'''
    (root / "prepare.py").write_text(script, encoding="utf-8")
    _run([sys.executable, "prepare.py"], root, "preparing the docs workspace")
    for name in ("dets.json", "detections.json"):
        shutil.copy(root / "preds.json", root / name)
    return root


_WORKSPACES: dict[str, Path] = {}
_DONE: dict[str, set[int]] = {}


def _workspace(page: str, assets: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if page not in _WORKSPACES:
        ws = tmp_path_factory.mktemp(Path(page).stem)
        for item in assets.iterdir():  # files copied (a block may write one), folders linked
            if item.name == "prepare.py":
                continue
            if item.is_dir():
                (ws / item.name).symlink_to(item, target_is_directory=True)
            else:
                shutil.copy(item, ws / item.name)
        _WORKSPACES[page] = ws
        _DONE[page] = set()
        if page in PAGE_SETUP:
            (ws / ".setup.sh").write_text("set -e\n" + "\n".join(PAGE_SETUP[page]) + "\n")
            _run(["bash", ".setup.sh"], ws, f"preparing the workspace of {page}")
    return _WORKSPACES[page]


def _skip_reason(block: Block) -> str | None:
    if block.marker and block.marker.startswith("skip"):
        return block.marker[len("skip ("):-1]
    return None


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_docs_block(block: Block, assets: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    why = _skip_reason(block)
    if why:
        pytest.skip(f"{block.id}: {why}")
    ws = _workspace(block.page, assets, tmp_path_factory)
    # run the page's earlier blocks first when this one is run alone (-k): it may need their files
    for earlier in BLOCKS:
        if earlier.page == block.page and earlier.line < block.line \
                and earlier.line not in _DONE[block.page] and not _skip_reason(earlier):
            _DONE[block.page].add(earlier.line)
            run_block(earlier, ws)
    _DONE[block.page].add(block.line)
    run_block(block, ws)


def test_blocks_found() -> None:
    """The extractor sees the pages' blocks (a regex that matched nothing would pass everything)."""
    pages = {b.page for b in BLOCKS}
    assert "README.md" in pages and "docs/data-model.md" in pages
    assert sum(b.lang == "python" for b in BLOCKS) >= 5


_FENCE_LINE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([^`\s]*)[^`]*$")  # a backtick in the rest: inline code


def untagged_fences(text: str) -> list[int]:
    """Lines of the fences that open a block without a language tag (indented ones too).

    An untagged block is never run here, so a command in it could go stale unseen; output, file
    layouts and prompts are tagged ``text`` (or ``json``, ``yaml``, ...) to say they are not run.
    """
    found, fence = [], ""
    for n, line in enumerate(text.splitlines(), 1):
        m = _FENCE_LINE.match(line)
        if not m:
            continue
        if not fence:
            fence = m.group(1)
            if not m.group(2):
                found.append(n)
        elif m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not m.group(2):
            fence = ""
    return found


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_fence_has_a_language(page: Path) -> None:
    lines = untagged_fences(page.read_text(encoding="utf-8"))
    assert not lines, (f"{page.relative_to(ROOT).as_posix()}: fenced blocks without a language at "
                       f"lines {lines}: tag commands bash/console/python (run here), output text")


def test_untagged_fences() -> None:
    text = ("```bash\nx\n```\n\n```\nout\n```\n  ```\n  indented\n  ```\n````text\n```\n````\n"
            "```` ```python ```` is inline code\n")
    assert untagged_fences(text) == [5, 8]


def test_marker_parsing(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("<!-- docs-test: skip (needs a GPU server) -->\n```bash\nx\n```\n\n"
                    "<!-- docs-test: usage -->\n```bash\nhoibench demo [--seed N]\n```\n"
                    "```python\nprint(1)\n```\n", encoding="utf-8")
    blocks = extract_blocks(page, root=tmp_path)
    assert [b.marker for b in blocks] == ["skip (needs a GPU server)", "usage", None]
    assert [b.line for b in blocks] == [2, 7, 10]


def test_failing_block_fails(tmp_path: Path) -> None:
    """A block that exits non-zero fails the test, with the page and line in the message."""
    bad = Block("docs/x.md", 3, "bash", "hoibench eval hico --gt hico-det:test --pred missing.json\n", None)
    with pytest.raises(pytest.fail.Exception, match=r"docs/x.md:3 \(bash\) exited [12]"):
        run_block(bad, tmp_path)
    with pytest.raises(pytest.fail.Exception, match=r"docs/x\.md:4"):
        run_block(Block("docs/x.md", 4, "python", "raise SystemExit(3)\n", None), tmp_path)
    with pytest.raises(pytest.fail.Exception, match="hoibench no-such-command --help"):
        run_block(Block("docs/x.md", 5, "bash", "hoibench no-such-command [--x]\n", "usage"), tmp_path)
    with pytest.raises(AssertionError, match="no Makefile target"):
        run_block(Block("docs/x.md", 6, "bash", "make no-such-target\n", None), tmp_path)


def test_console_transcripts(tmp_path: Path) -> None:
    """A console block runs its ``$`` commands with their continuation lines; a command shown with an
    ``error:`` line must exit non-zero and print that line."""
    ok = "$ printf 'a\\n' \\\n    > made.txt\n$ sh -c 'echo \"error: x: bad\" >&2; exit 2'\nerror: x: bad\n"
    run_block(Block("docs/x.md", 1, "console", ok, None), tmp_path)
    assert (tmp_path / "made.txt").read_text() == "a\n"
    with pytest.raises(pytest.fail.Exception, match="exited 0, the page shows an error"):
        run_block(Block("docs/x.md", 2, "console", "$ true\nerror: x: bad\n", None), tmp_path)
    other = "$ sh -c 'echo \"error: x: other\" >&2; exit 2'\nerror: x: bad\n"
    with pytest.raises(pytest.fail.Exception, match="a line the command did not print: error: x: bad"):
        run_block(Block("docs/x.md", 3, "console", other, None), tmp_path)


def test_indented_blocks_found(tmp_path: Path) -> None:
    """A block inside a list item is run too, its indentation removed."""
    page = tmp_path / "p.md"
    page.write_text("- item:\n\n  <!-- docs-test: usage -->\n  ```bash\n  hoibench demo\n  ```\n",
                    encoding="utf-8")
    [block] = extract_blocks(page, root=tmp_path)
    assert (block.line, block.code, block.marker) == (4, "hoibench demo\n", "usage")
