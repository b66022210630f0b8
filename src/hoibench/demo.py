"""The main job, ``hoibench demo``: build the three benchmarks from the bundled data, run the
built-in baselines, evaluate them and write the report.

Everything runs on the CPU in a couple of minutes and uses the public pieces a user would call by
hand: :func:`hoibench.benchmarks.sg.build_preset` (HICO-DET-SG split 1),
:func:`hoibench.benchmarks.build_balanced_split` (B-RIGHT), the multiple-choice builder,
:func:`hoibench.evaluation.hico_mean_ap` and :func:`hoibench.evaluation.mcq_metrics`. Every
benchmark, answer and result file is written under the output directory, so each number of the
report can be reproduced with ``hoibench eval hico`` / ``hoibench mcq score`` (``docs/demo.md``).

The output directory is built as a whole in ``.NAME.partial`` beside it and swapped in when the
run finishes, so a kill leaves the previous complete output (or none), never a mix. The staging
folder records the run's provenance (parameters, hoibench version, content hashes of the bundled
data): a re-run with exactly the same provenance resumes from it and a finished output with the
same provenance is reused as it is; any difference starts afresh.
"""

from __future__ import annotations

import dataclasses
import shutil
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hoibench._exceptions import ConfigError
from hoibench._io import atomic_folder, atomic_write_json, file_sha256, read_json, slug
from hoibench._progress import make_progress
from hoibench._version import __version__
from hoibench.benchmarks import build_balanced_split, hico_det_selection_counts
from hoibench.benchmarks.mcq import PAPER_REFERENCE, build_mcq_benchmark, question_statistics
from hoibench.benchmarks.sg import PAPER_TABLE1, build_preset, paper_row, split_table1
from hoibench.data import HOIDataset
from hoibench.datasets import bundled_path, ground_truth_id, hico_class_subsets, load_dataset
from hoibench.evaluation import (
    ClassesWithoutGroundTruthWarning,
    hico_mean_ap,
    mcq_class_recall,
    mcq_metrics,
)
from hoibench.formats import read_answers, write_answers, write_ppdm, write_predictions
from hoibench.reports import ReportFiles, Table, TrainCounts, build_report
from hoibench.results import (
    GROUND_TRUTH_KEY,
    ResultRecord,
    hico_map_record,
    mcq_record,
    read_result,
    write_record,
)
from hoibench.runners import ObjectPriorDetector, PriorAnswerer, RandomAnswerer

__all__ = ["DEMO_ANSWERERS", "DEMO_DETECTORS", "DemoConfig", "DemoOutput", "run_demo"]

#: detection baselines: model name → ``top_k`` of :class:`~hoibench.runners.ObjectPriorDetector`
DEMO_DETECTORS: dict[str, int | None] = {
    "object-prior": None,
    "object-prior-top5": 5,
    "object-prior-top1": 1,
}
#: multiple-choice baselines: model name → ``k`` of the prior answerer (``None``: random answerer)
DEMO_ANSWERERS: dict[str, int | None] = {"prior-top1": 1, "prior-top2": 2, "random": None}

BENCH_HICO, BENCH_SG, BENCH_BRIGHT, BENCH_MCQ = "HICO-DET", "HICO-DET-SG1", "B-RIGHT", "MCQ-HOI"


@dataclass(frozen=True)
class DemoConfig:
    """Parameters of a demo run (all echoed in ``demo.json`` and the report).

    Parameters
    ----------
    seed:
        Seed of the balanced split, the question builder, the random answerer and the bootstrap.
    sg_preset:
        The HICO-DET-SG split (released policy, as published).
    top_k, l_train, l_test, epochs:
        B-RIGHT parameters (the paper's 351, 50, 10, 20).
    n_bootstrap:
        Bootstrap resamples of the multiple-choice confidence intervals.
    protocol:
        HICO-DET mAP protocol.
    max_test_images:
        Keep only the first ``n`` test images of each benchmark (quick runs; ``None``: all).
    save_predictions:
        Also write every baseline's detections (hoibench prediction JSON, ~20 MB each).
    n_bins:
        Bins of the head-to-tail recall histogram.
    """

    seed: int = 0
    sg_preset: str = "hico-det-sg1"
    top_k: int = 351
    l_train: int = 50
    l_test: int = 10
    epochs: int = 20
    n_bootstrap: int = 1000
    protocol: str = "official"
    max_test_images: int | None = None
    save_predictions: bool = False
    n_bins: int = 10

    def __post_init__(self) -> None:
        if self.max_test_images is not None and self.max_test_images < 1:
            raise ConfigError(f"max_test_images must be a positive int or None; got {self.max_test_images!r}")
        if self.n_bootstrap < 0:
            raise ConfigError(f"n_bootstrap must be >= 0; got {self.n_bootstrap}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class DemoOutput:
    """What :func:`run_demo` produced."""

    out_dir: Path
    report: ReportFiles
    results: list[ResultRecord[Any]]
    timings: dict[str, float] = field(default_factory=dict)


class _Steps:
    """A rich progress bar over the demo's steps (silent when ``enabled`` is false)."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total = total
        self.enabled = enabled
        self.timings: dict[str, float] = {}
        self._progress: Any = None

    def __enter__(self) -> _Steps:
        if self.enabled:
            self._progress = make_progress(description="[bold]{task.description:<48}")
            self._progress.__enter__()
            self._task = self._progress.add_task("hoibench demo", total=self.total)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        if self._progress is not None:
            self._progress.update(self._task, description=name)
        t0 = time.perf_counter()
        yield
        self.timings[name] = round(time.perf_counter() - t0, 3)
        if self._progress is not None:
            self._progress.advance(self._task)


def _head(ds: HOIDataset, n: int | None) -> HOIDataset:
    return ds if n is None or n >= ds.n_images else ds.subset(np.arange(n), name=ds.name)


def _cached(path: Path, reuse: bool, compute: Callable[[], ResultRecord[Any]]) -> ResultRecord[Any]:
    """The result file at ``path`` when reusing a finished run, else computed and written."""
    if reuse and path.exists():
        return read_result(path)
    return write_record(compute(), path)


# ---------------------------------------------------------------------------------- benchmarks
@dataclass
class _DetectionBenchmark:
    name: str
    train: HOIDataset
    test: HOIDataset
    gt: str  # the ground truth as a dataset name or file, for ``hoibench eval hico --gt``
    classes_spec: str | None  # ``--classes`` of ``hoibench eval hico`` (sets the headline, as there)
    #: what ``gt`` names, by content (:func:`ground_truth_id`), taken where the file is written: ``gt``
    #: is the file's path once the folder is swapped in, which does not exist while it is built
    gt_id: str = ""


def _build_benchmarks(cfg: DemoConfig, bench_dir: Path, steps: _Steps,
                      show: Callable[[object], str]) -> tuple[list[_DetectionBenchmark], list[Table]]:
    with steps.step("loading bundled HICO-DET"):
        train, test = load_dataset("hico-det:train"), load_dataset("hico-det:test")
        union = load_dataset("hico-det")
    with steps.step(f"building {cfg.sg_preset}"):
        sg = build_preset(cfg.sg_preset, boxes="0-based")
        sg_dir = bench_dir / cfg.sg_preset
        sg_paths = sg.write(sg_dir)
    with steps.step("building the B-RIGHT balanced split"):
        bal = build_balanced_split(union, top_k=cfg.top_k, l_train=cfg.l_train, l_test=cfg.l_test,
                                   epochs=cfg.epochs, random_state=cfg.seed,
                                   selection_counts=hico_det_selection_counts(test))
        bal_dir = bench_dir / "b-right"
        bal_paths = bal.write(bal_dir)

    # the balanced classes as a list file: what ``hoibench eval hico --classes FILE`` reads
    bal_ids = bal_dir / "hoi_ids.json"
    atomic_write_json(bal_ids, sorted(int(h) for h in bal.classes))
    benches = [
        _DetectionBenchmark(BENCH_HICO, train, test, "hico-det:test", None),
        _DetectionBenchmark(BENCH_SG, sg.train, sg.test, show(sg_paths["test"]), f"unseen:{sg_dir}",
                            ground_truth_id(str(sg_paths["test"]))),
        _DetectionBenchmark(BENCH_BRIGHT, bal.train.dataset, bal.test.dataset,
                            show(bal_paths["test"]), str(bal_ids), ground_truth_id(str(bal_paths["test"]))),
    ]
    if cfg.max_test_images is not None:
        # a quick run evaluates the first images only: write exactly that ground truth
        for b in benches:
            b.test = _head(b.test, cfg.max_test_images)
            gt = bench_dir / "evaluated" / f"{slug(b.name)}-test_hico.json"
            write_ppdm(b.test, gt)
            b.gt, b.gt_id = show(gt), ground_truth_id(str(gt))

    split_no = cfg.sg_preset[-1]
    parts = [("HICO-DET (bundled)", split_table1(train, test)),
             (f"HICO-DET-SG split {split_no} (rebuilt)", sg.table1())]
    for key, label in (("hico-det", "HICO-DET (paper)"), (cfg.sg_preset, f"HICO-DET-SG split {split_no} (paper)")):
        if key in PAPER_TABLE1:
            parts.append((label, paper_row(key)))
    rows = [(label, part, t["images"][part], t["triplets"][part], t["combinations"][part])
            for label, t in parts for part in ("train", "test")]
    sg_table = Table("stats-hico-det-sg", "HICO-DET-SG: Table 1 of the SG paper",
                     ("data split", "part", "images", "triplets", "combinations"), tuple(rows),
                     caption=f"The {cfg.sg_preset} split rebuilt from the bundled annotations with the "
                             "released rule and seed, next to the paper's Table 1. The bundled train set "
                             "(from HAKE) lacks 217 no_interaction pairs of the official release; see "
                             "docs/sg-splits.md for the other differences.")
    bal_stats = bal.stats()
    bal_rows = []
    for set_name, st in bal_stats["sets"].items():
        bal_rows.append((set_name, st["images"], st["instances"], st["max"], st["min"], st["classes"],
                         st["objects"], st["verbs"], st["removed_annotation_images"],
                         bal_stats["total_deficit"][set_name]))
    bal_table = Table("stats-b-right", "B-RIGHT: Table 1 / S1 of the B-RIGHT paper",
                      ("set", "images", "instances", "max", "min", "classes", "objects", "verbs", "R/A",
                       "deficit"), tuple(bal_rows),
                      caption=f"Top-{cfg.top_k} classes, L_train={cfg.l_train}, L_test={cfg.l_test}, "
                              f"{cfg.epochs} rounds, seed {cfg.seed}, real images only; 'deficit' counts "
                              "the instances the generation pipeline would have to add.")
    return benches, [sg_table, bal_table]


# ---------------------------------------------------------------------------------- detection
def _map_results(cfg: DemoConfig, benches: list[_DetectionBenchmark], out: Path, reuse: bool,
                 steps: _Steps, show: Callable[[object], str]) -> list[ResultRecord[Any]]:
    results = []
    for b in benches:
        for model, top_k in DEMO_DETECTORS.items():
            path = out / "results" / "map" / slug(b.name) / f"{model}.json"

            def compute(b: _DetectionBenchmark = b, model: str = model,
                        top_k: int | None = top_k) -> ResultRecord[Any]:
                preds = ObjectPriorDetector(top_k=top_k, name=model).fit(b.train).predict(b.test)
                pred_path = out / "predictions" / slug(b.name) / f"{model}.json"
                if cfg.save_predictions:
                    write_predictions(preds, pred_path)
                subsets, classes = hico_class_subsets(b.classes_spec) if b.classes_spec else ({}, None)
                with warnings.catch_warnings():  # the report states it (its mAP section)
                    warnings.simplefilter("ignore", ClassesWithoutGroundTruthWarning)
                    res = hico_mean_ap(preds, b.test, protocol=cfg.protocol, class_subsets=subsets,
                                       classes=classes)
                spec = show(b.classes_spec) if b.classes_spec else None
                cmd = f"hoibench eval hico --gt {b.gt} --pred {show(pred_path)} --protocol {cfg.protocol}"
                return hico_map_record(res, model=model, benchmark=b.name, classes_spec=spec,
                                       class_subsets=subsets, **{GROUND_TRUTH_KEY: b.gt_id or ground_truth_id(b.gt)},
                                       evaluate_by_hand={
                    "gt": b.gt, "predictions": show(pred_path), "classes": spec,
                    "command": cmd + (f" --classes {spec}" if spec else "")
                    + " --json OUT" + ("" if cfg.save_predictions else "  (run the demo with --save-predictions)"),
                })

            with steps.step(f"{model} on {b.name}"):
                results.append(_cached(path, reuse, compute))
    return results


# ---------------------------------------------------------------------------------- multiple choice
def _mcq(cfg: DemoConfig, out: Path, reuse: bool, steps: _Steps,
         show: Callable[[object], str]) -> tuple[list[ResultRecord[Any]], list[Table]]:
    train, test = load_dataset("hico-det:train"), load_dataset("hico-det:test")
    train_counts = train.vocab.train_counts_official()
    with steps.step("building the multiple-choice benchmark"):
        build = build_mcq_benchmark(_head(test, cfg.max_test_images), random_state=cfg.seed,
                                    settings=(1, 2), train_counts=train_counts)
        questions = list(build.questions)
        qpath = build.write(out / "benchmarks" / "mcq" / "questions.jsonl")["questions"]
    by_setting = {s: [q for q in questions if q.setting == s] for s in (1, 2)}
    class_names = [train.vocab.hoi_name(h) for h in range(train.vocab.n_hois)]
    results: list[ResultRecord[Any]] = []
    for model, k in DEMO_ANSWERERS.items():
        with steps.step(f"{model} on {BENCH_MCQ}"):
            apath = out / "answers" / f"{model}.jsonl"
            if reuse and apath.exists():
                answers = list(read_answers(apath, questions))
            else:
                answerer: Any = (RandomAnswerer(random_state=cfg.seed, name=model) if k is None
                                 else PriorAnswerer(k=k, name=model).fit(train))
                answers = answerer.answer(questions)
                write_answers(apath, answers, header={"model": model, "seed": 0})
            for setting, qs in by_setting.items():
                bench = f"{BENCH_MCQ} setting {setting}"
                stem = f"{model}-setting{setting}"

                def score(qs: list[Any] = qs, answers: list[Any] = answers, model: str = model,
                          bench: str = bench, apath: Path = apath, setting: int = setting) -> ResultRecord[Any]:
                    res = mcq_metrics(answers, qs, n_bootstrap=cfg.n_bootstrap, random_state=cfg.seed)
                    return mcq_record([(model, res)], model=model, benchmark=bench, evaluate_by_hand={
                        "questions": show(qpath), "setting": setting, "answers": show(apath)})

                def recall(qs: list[Any] = qs, answers: list[Any] = answers, model: str = model,
                           bench: str = bench) -> ResultRecord[Any]:
                    return ResultRecord(mcq_class_recall(answers, qs, train_counts=train_counts,
                                                         class_names=class_names), model, bench,
                                        {"train_counts_source": "HICO-DET's official train split "
                                                                "(the questions come from its test set)"})

                for kind, fn in (("mcq", score), ("recall", recall)):
                    results.append(_cached(out / "results" / kind / f"{stem}.json", reuse, fn))
    return results, [_mcq_stats_table(questions, test, train_counts, build.stats())]


def _mcq_stats_table(questions: list[Any], test: HOIDataset, train_counts: np.ndarray,
                     build_info: dict[str, Any]) -> Table:
    """The multiple-choice paper's Table 1 and distribution figures, next to its numbers."""

    st = question_statistics(questions, dataset=test, train_counts=train_counts)
    # the paper's KL and head/tail ratio are of its setting-2 benchmark: compare like with like
    st2 = question_statistics([q for q in questions if q.setting == 2], train_counts=train_counts)
    scene = st.get("scene_composition", {})
    hico = PAPER_REFERENCE["hico_det_test"]
    removed = build_info.get("removed_easy", {})
    rows = [
        ("images", st["images"], PAPER_REFERENCE["images"], None),
        ("questions per setting", ", ".join(f"{k}: {v}" for k, v in st["settings"].items()), None, None),
        ("correct answers per question", ", ".join(f"{k}: {v}" for k, v in st["correct_answers_histogram"].items()),
         None, None),
        ("classes among the correct choices (both settings)", st.get("classes_correct"), None, None),
        ("scenes removed as easy", ", ".join(f"{k}: {v}" for k, v in sorted(removed.items())), None, None),
        ("share: single person, single object", scene.get("single_person_single_object"),
         PAPER_REFERENCE["single_person_single_object"], hico["single_person_single_object"]),
        ("share: several people, different interactions", scene.get("multi_person_different_hoi"),
         PAPER_REFERENCE["multi_person_different_hoi"], hico["multi_person_different_hoi"]),
        ("share: same interaction within multi-person scenes", scene.get("same_hoi_within_multi_person"),
         PAPER_REFERENCE["same_hoi_within_multi_person"], hico["same_hoi_within_multi_person"]),
        ("KL(train ‖ benchmark), setting 2", st2.get("kl_train_benchmark"), PAPER_REFERENCE["kl_train_benchmark"],
         hico["kl_train_test"]),
        ("head/tail ratio (top-20 / bottom-20 train classes), setting 2", st2.get("head_tail_ratio"),
         PAPER_REFERENCE["head_tail_ratio"], hico["head_tail_ratio"]),
    ]
    return Table("stats-mcq", "Multiple-choice benchmark: Table 1 and class distribution",
                 ("statistic", "this benchmark", "paper's benchmark", "HICO-DET test (paper)"),
                 tuple(rows), decimals=3,
                 caption="Built from the bundled HICO-DET test set with the builder's defaults and no "
                         "negative-filtering judge (negatives are not checked by a VLM); KL and the "
                         "head/tail ratio use the official train counts and the correct choices of the "
                         "setting-2 questions, as the paper's numbers do (mcq build prints the same).")


# ---------------------------------------------------------------------------------- the job
STATS_FILE = "benchmarks/stats-tables.json"


def _train_counts(benches: list[_DetectionBenchmark], bench_dir: str) -> dict[str, dict[str, Any]]:
    """Each detection benchmark's own per-class train counts (JSON-ready): the head-to-tail
    figures bin a benchmark's classes by *its* train split, not by HICO-DET's."""
    def own(b: _DetectionBenchmark) -> dict[str, Any]:
        if b.name == BENCH_HICO:  # the official counts (the bundled train set lacks 217 pairs)
            return {"counts": b.train.vocab.train_counts_official().tolist(),
                    "source": "HICO-DET's official train split"}
        return {"counts": b.train.hoi_counts().tolist(),
                "source": f"the {b.name} train split ({bench_dir}/{slug(b.name)})"}

    return {b.name: own(b) for b in benches}


def _provenance(cfg: DemoConfig) -> dict[str, Any]:
    """What made a demo output: its parameters, the hoibench version and the content hashes of
    the bundled data it reads (a reused file must have been made by exactly this)."""
    inputs = {f"hico-det:{split}": f"sha256:{file_sha256(bundled_path('hico-det', split))}"
              for split in ("train", "test")}
    return {"config": cfg.to_dict(), "hoibench": __version__, "inputs": inputs}


def _marker(folder: Path) -> dict[str, Any] | None:
    """The ``demo.json`` of a folder, when it is one."""
    path = folder / "demo.json"
    if not path.is_file():
        return None
    data = read_json(path)
    return data if isinstance(data, dict) and data.get("kind") == "hoibench_demo" else None


def _finished_run(out: Path, previous: dict[str, Any]) -> tuple[list[Any], list[Table], dict[str, Any]] | None:
    """Results, statistics tables and train counts of a finished run with the same provenance,
    if all are there."""
    names = previous.get("results")
    if not previous.get("finished") or not isinstance(names, list) or not (out / STATS_FILE).exists():
        return None
    paths = [out / n for n in names]
    if not all(p.exists() for p in paths):
        return None
    results = [read_result(p) for p in paths]
    saved = read_json(out / STATS_FILE)
    if not isinstance(saved.get("train_counts"), dict):
        return None  # written before the benchmarks' train counts were kept
    return results, [Table.from_dict(d) for d in saved["tables"]], saved["train_counts"]


def partial_folder(out_dir: str | Path) -> Path:
    """Where :func:`run_demo` builds ``out_dir`` before swapping it in (and resumes from)."""
    out = Path(out_dir)
    return out.parent / f".{out.name}.partial"


def run_demo(out_dir: str | Path, *, config: DemoConfig | None = None, progress: bool = True) -> DemoOutput:
    """Build the benchmarks, run and evaluate the baselines, write the report under ``out_dir``.

    Returns the report's paths, the typed results and the time of each step.
    """

    cfg = config or DemoConfig()
    final = Path(out_dir)
    if final.exists() and not final.is_dir():
        raise ConfigError(f"{final}: is a file, not a folder")
    prov = _provenance(cfg)
    previous = _marker(final)
    finished = (_finished_run(final, previous)
                if previous is not None and previous.get("provenance") == prov else None)
    n_steps = 1 if finished else 3 + 3 * len(DEMO_DETECTORS) + 1 + len(DEMO_ANSWERERS) + 1
    t0 = time.perf_counter()
    with _Steps(n_steps, progress) as steps:
        if finished is not None:  # the same run, finished: its files as they are, the report again
            results, stats_tables, train_counts = finished
            files = _write_report(cfg, results, stats_tables, train_counts, final, steps)
            _write_marker(final, cfg, prov, steps, t0, files, results, final)
        else:
            stage = partial_folder(final)
            if stage.exists() and (_marker(stage) or {}).get("provenance") != prov:
                shutil.rmtree(stage)  # another run's partial work: never mixed into this one
            with atomic_folder(final, owned=lambda f: _marker(f) is not None, staging=stage) as work:
                reuse = _marker(work) is not None
                atomic_write_json(work / "demo.json", {"kind": "hoibench_demo", "config": cfg.to_dict(),
                                                       "provenance": prov, "finished": False}, indent=True)

                def show(path: object) -> str:
                    """A path under the staging folder as it will be once swapped in."""
                    return str(path).replace(str(work), str(final))

                benches, stats_tables = _build_benchmarks(cfg, work / "benchmarks", steps, show)
                train_counts = _train_counts(benches, "benchmarks")
                results = _map_results(cfg, benches, work, reuse, steps, show)
                mcq_results, mcq_tables = _mcq(cfg, work, reuse, steps, show)
                stats_tables += mcq_tables
                atomic_write_json(work / STATS_FILE, {"tables": [t.to_dict() for t in stats_tables],
                                                      "train_counts": train_counts}, indent=True)
                # the report is built from what was written, read back as a re-run reads it (JSON
                # has no inf, tuples come back as lists): a fresh and a resumed run write the same
                results = [dataclasses.replace(read_result(Path(r.source)), source=show(r.source))
                           for r in results + mcq_results]
                saved = read_json(work / STATS_FILE)
                stats_tables = [Table.from_dict(d) for d in saved["tables"]]
                train_counts = saved["train_counts"]
                files = _write_report(cfg, results, stats_tables, train_counts, work, steps)
                _write_marker(work, cfg, prov, steps, t0, files, results, final)
            files = dataclasses.replace(files, **{f.name: _moved(getattr(files, f.name), work, final)
                                                  for f in dataclasses.fields(files)})
    return DemoOutput(final, files, results, {**steps.timings, "total": round(time.perf_counter() - t0, 3)})


def _moved(value: Any, old: Path, new: Path) -> Any:
    """A path (or list of paths) under ``old`` as it is under ``new``."""
    if isinstance(value, Path):
        return new / value.relative_to(old) if value.is_relative_to(old) else value
    if isinstance(value, (list, tuple)):
        return type(value)(_moved(v, old, new) for v in value)
    if isinstance(value, dict):
        return {k: _moved(v, old, new) for k, v in value.items()}
    return value


def _write_report(cfg: DemoConfig, results: list[Any], stats_tables: list[Table],
                  train_counts: dict[str, dict[str, Any]], out: Path, steps: _Steps) -> ReportFiles:
    with steps.step("writing the report"):
        report = build_report(
            results, title="hoibench demo: what language priors alone score",
            intro="Baselines that see no pixels — ground-truth boxes scored by how often each "
                  "verb goes with the object in train, and multiple-choice answers picked by "
                  "train frequency or at random — on the three benchmarks hoibench builds from "
                  "the bundled HICO-DET annotations.",
            meta={"hoibench": __version__, "config": cfg.to_dict(),
                  "detectors": list(DEMO_DETECTORS), "answerers": list(DEMO_ANSWERERS)},
            stats_tables=stats_tables, reference_benchmark=BENCH_HICO, n_bins=cfg.n_bins,
            train_counts={b: TrainCounts(np.asarray(v["counts"], dtype=float), v["source"])
                          for b, v in train_counts.items()})
        return report.write(out)


def _write_marker(out: Path, cfg: DemoConfig, prov: dict[str, Any], steps: _Steps, t0: float,
                  files: ReportFiles, results: list[Any], final: Path) -> None:
    """``demo.json`` of a finished run (written last: its ``finished`` says the folder is whole)."""
    timings = {**steps.timings, "total": round(time.perf_counter() - t0, 3)}
    atomic_write_json(out / "demo.json", {
        "kind": "hoibench_demo", "config": cfg.to_dict(), "provenance": prov, "finished": True,
        "timings": timings, "report": str(final / Path(files.html).relative_to(out)),
        "results": [str(Path(r.source).relative_to(final)) for r in results]}, indent=True)
