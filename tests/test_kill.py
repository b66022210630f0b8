"""Kill tests (issue 13, findings 1 and 2): ``split sg``, ``split balanced``, ``demo`` and
``augment run`` are killed with SIGKILL at random moments. After every kill the target folder is
absent, the old complete output or the new complete output (never a mix), and a re-run gives
files byte-identical to an uninterrupted run.

The moments are drawn from a seeded generator over the length of an uninterrupted run, so a kill
may land while the command reads, computes or writes; the seed is printed on failure."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "HOIBENCH_DEBUG": "0"}


def _tree(folder: Path, *, skip: tuple[str, ...] = ()) -> dict[str, bytes] | None:
    """Every file under ``folder`` (relative name → bytes); None when the folder is absent."""
    if not folder.exists():
        return None
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.relative_to(folder).as_posix().startswith(skip)}


def _run(args: list[str], timeout: float = 300, ok_codes: tuple[int, ...] = (0,)) -> tuple[int, float]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "hoibench", *args], env=ENV, timeout=timeout,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in ok_codes, proc.stderr[-2000:]
    return proc.returncode, time.perf_counter() - t0


def _kill_after(args: list[str], delay: float) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "hoibench", *args], env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        proc.wait(delay)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _leftovers(target: Path) -> list[str]:
    return sorted(p.name for p in target.parent.iterdir() if p.name.startswith(f".{target.name}."))


def _kill_loop(new_args: list[str], old_args: list[str] | None, target: Path, ref: Path,
               n_kills: int, seed: int, *, normalise=lambda t, _folder: t, ok_codes=(0,)) -> None:
    """The whole check: ``ref`` built uninterrupted with ``new_args`` (its ``--out`` swapped for
    ``ref``), ``target`` built with ``old_args`` (or absent), then ``n_kills`` killed runs of
    ``new_args`` on ``target``, then one that finishes."""
    def on(folder: Path) -> list[str]:
        a = list(new_args)
        a[a.index("--out") + 1] = str(folder)
        return a

    _, length = _run(on(ref), ok_codes=ok_codes)
    new = normalise(_tree(ref), ref)
    old = None
    if old_args is not None:
        _run(old_args, ok_codes=ok_codes)
        old = normalise(_tree(target), target)
        assert old is not None and old != new
    rng = random.Random(seed)
    states = []
    for k in range(n_kills):
        _kill_after(new_args, rng.uniform(0.1, 1.0) * length)
        now = normalise(_tree(target), target)
        state = "absent" if now is None else "old" if now == old else "new" if now == new else "mixed"
        states.append(state)
        assert state != "mixed", f"kill {k} (seed {seed}) left {target} neither old nor new: " \
                                 f"{sorted(now or {})}"
    _run(new_args, ok_codes=ok_codes)
    assert normalise(_tree(target), target) == new, f"re-run after kills {states} differs"
    assert _leftovers(target) == []


def _small_source(tmp_path: Path, n_images: int = 800) -> str:
    """The first images of the bundled HICO-DET test set as a file (a quick split to build)."""
    import numpy as np

    from hoibench.datasets import load_dataset
    from hoibench.formats import write_ppdm

    path = tmp_path / "source.json"
    write_ppdm(load_dataset("hico-det:test").subset(np.arange(n_images)), path)
    return str(path)


def test_split_sg_killed_at_random_moments(tmp_path: Path) -> None:
    args = ["split", "sg", "--dataset", _small_source(tmp_path), "--ratio", "0.8", "--seed"]
    _kill_loop([*args, "0", "--out", str(tmp_path / "D")], [*args, "1", "--out", str(tmp_path / "D")],
               tmp_path / "D", tmp_path / "ref", n_kills=5, seed=13, ok_codes=(0, 1, 2))


def test_split_balanced_killed_at_random_moments(tmp_path: Path) -> None:
    args = ["split", "balanced", "--dataset", _small_source(tmp_path), "--top-k", "20", "--l-train", "5",
            "--l-test", "2", "--epochs", "2"]
    _kill_loop([*args, "--out", str(tmp_path / "D")], [*args, "--seed", "1", "--out", str(tmp_path / "D")],
               tmp_path / "D", tmp_path / "ref", n_kills=7, seed=13)


def _without_paths(tree: dict[str, bytes] | None, folder: Path) -> dict[str, bytes] | None:
    """The files with the folder's own path written as ``OUT`` (results record where they are) and
    the demo's timings left out (they are the one thing a re-run may change)."""
    if tree is None:
        return None
    out = {}
    for name, data in tree.items():
        if name == "demo.json":
            marker = json.loads(data)
            marker.pop("timings", None)
            data = json.dumps(marker, sort_keys=True).encode()
        out[name] = data.replace(str(folder).encode(), b"OUT")
    return out


@pytest.mark.slow
def test_demo_killed_at_random_moments_never_mixes_two_seeds(tmp_path: Path) -> None:
    """Finding 1: ``demo --seed 1`` finished, then ``demo --seed 0`` killed again and again, then
    finished: the folder is the seed-1 output until the seed-0 one replaces it whole, and the
    seed-0 results are those of an uninterrupted seed-0 run (not seed-1 files reused)."""
    quick = ["--max-test-images", "20", "--bootstrap", "10", "--quiet"]
    d = tmp_path / "D"
    _kill_loop(["demo", "--out", str(d), "--seed", "0", *quick],
               ["demo", "--out", str(d), "--seed", "1", *quick], d, tmp_path / "ref",
               n_kills=4, seed=13, normalise=_without_paths)


@pytest.mark.slow
def test_augment_run_killed_at_random_moments(tmp_path: Path) -> None:
    """``augment run`` resumes in its folder: after a kill its deliverables (``annotations/`` and
    ``summary.json``) are absent or whole, and the finished run equals an uninterrupted one."""
    pytest.importorskip("diffusers")
    from hoibench.formats import write_ppdm
    from tests.test_augment import EAT_APPLE, HOLD_CUP, RIDE_HORSE, real_dataset

    real = real_dataset(tmp_path / "real", {EAT_APPLE: 10, RIDE_HORSE: 4, HOLD_CUP: 3})
    write_ppdm(real, tmp_path / "real.json")
    _run(["split", "balanced", "--dataset", str(tmp_path / "real.json"), "--top-k", "3",
          "--l-train", "4", "--l-test", "1", "--out", str(tmp_path / "s0")])
    cfg = tmp_path / "c.yaml"
    cfg.write_text("generator: {kind: tiny, steps: 1, width: 32, height: 32}\ndetector: {kind: fake}\n"
                   "pseudo_label_verbs: target\ndescribe_vlm: {kind: constant, reply: 'at dawn'}\n"
                   "region_vlm: {kind: constant, reply: 'Yes'}\nllm: {kind: constant, reply: 'Yes'}\n")
    d = tmp_path / "aug"

    def deliverables(tree: dict[str, bytes] | None, folder: Path) -> dict[str, bytes] | None:
        """What a reader takes from the folder: the annotations, the summary and the images."""
        if tree is None:
            return None
        keep = {n: v.replace(str(folder).encode(), b"OUT") for n, v in tree.items()
                if n.startswith(("annotations/", "images/")) or n == "summary.json"}
        names = {n for n in keep if n.startswith("annotations/")}
        assert names in (set(), {"annotations/trainval_augment.json", "annotations/instances_augment.json",
                                 "annotations/provenance.json"}), names
        return {n: v for n, v in keep.items() if not n.startswith("images/")} or None

    args = ["augment", "run", "--deficits", str(tmp_path / "s0" / "deficits.json"), "--dataset",
            str(tmp_path / "real.json"), "--images", str(tmp_path / "real"), "--out", str(d),
            "--config", str(cfg), "--no-progress"]
    _kill_loop(args, None, d, tmp_path / "ref", n_kills=4, seed=13, normalise=deliverables)
