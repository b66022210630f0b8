"""``hoibench eval hico``: HICO-DET mAP under the official, QPIC or pocket protocol.

Thin: read the ground truth and the detections with :mod:`hoibench.formats`, score them with
:func:`hoibench.evaluation.hico_mean_ap`, render a summary (and optionally per-class CSV / the
results JSON of ``docs/interfaces.md``).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from hoibench.cli._common import confidence_interval_options, console, echo_json, err_console

__all__ = ["hico"]


@click.command("hico")
@click.option("--gt", "gt_spec", required=True, metavar="FILE_OR_DATASET",
              help="Ground truth: a bundled dataset (hico-det:test) or an annotation file.")
@click.option("--pred", "pred_path", required=True, type=click.Path(exists=True),
              help="Detections: hoibench or generic prediction JSON, QPIC/CDN outputs as JSON, CDN's / GEN-VLKT's / "
                   "HOICLIP's results.json, or a ho-rcnn detections_XX.mat folder (UPT/PViC --cache) "
                   "(see docs/evaluation.md, 'From your model's output').")
@click.option("--format", "pred_format",
              type=click.Choice(["hoibench", "generic", "qpic", "cdn", "gen-vlkt", "ho-rcnn"]),
              default=None, help="Prediction format (detected from the content when omitted).")
@click.option("--box-shift", type=float, default=0.0, show_default=True, metavar="PIXELS",
              help="Add this to every predicted box after reading, for a file in another frame than its "
                   "format's documented one (e.g. -1: a 1-based file read as 0-based; docs/evaluation.md, "
                   "'Box frames').")
@click.option("--protocol", type=click.Choice(["official", "qpic", "pocket", "cdn"]), default="official",
              show_default=True, help="Which reference implementation to reproduce (cdn: qpic + pair-NMS).")
@click.option("--pair-nms", type=float, default=None, metavar="THRESHOLD",
              help="Apply CDN's pair-NMS (alpha 1, beta 0.5) with this threshold (CDN: 0.7) first.")
@click.option("--known-object", is_flag=True, help="Known-Object setting instead of Default.")
@click.option("--image-labels", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Image-level labels for --known-object: HICO's anno.mat or JSON {file: [objects]}.")
@click.option("--classes", "classes_spec", default=None, metavar="SPEC",
              help="Also report a class subset: rare, non-rare, unseen:SPLIT_DIR, zero-shot:BALANCED_DIR "
                   "(B-RIGHT's zero-shot classes; score its test_zero_shot_hico.json), rf-uc, nf-uc, uo, "
                   "uv, or a file of 0-based HOI ids (JSON list, one per line, or a balanced classes.json).")
@click.option("--lenient", is_flag=True,
              help="Drop bad detections (NaN or inverted boxes, unknown images or classes) and count them.")
@click.option("--per-class", "per_class_csv", type=click.Path(dir_okay=False), default=None,
              help="Write per-class AP as CSV.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False), default=None, is_flag=False, flag_value="-", metavar="PATH|-",
              help="Write the mAP results object (docs/interfaces.md); '-' prints it to stdout.")
@click.option("--matches", "matches_out", type=click.Path(dir_okay=False), default=None,
              help="Also write every counted detection's class, score and TP flag (kind 'hoi_matches', "
                   "for `hoibench analyze sensitivity --matches`).")
@click.option("--matlab-out", type=click.Path(), default=None,
              help="Also write ho-rcnn's evaluation input to cross-check in MATLAB: a folder of "
                   "detections_XX.mat (ho-rcnn/UPT layout), or one all_boxes file if the name ends in .mat.")
@click.option("--model", default="",
              help="Model name recorded in --json/--matches output [default: the --pred file's stem].")
@click.option("--benchmark", default="",
              help="Benchmark name recorded in --json/--matches output [default: the --gt name].")
@click.option("--bootstrap", "n_boot", type=click.IntRange(min=0), default=0, show_default=True,
              metavar="N", help="Bootstrap standard errors from N resamples of the test images (0: off); "
                                "no interval passed the coverage check for one model's mAP: compare models "
                                "with `hoibench analyze compare`.")
@confidence_interval_options
def hico(gt_spec: str, pred_path: str, pred_format: str | None, box_shift: float, protocol: str,
         pair_nms: float | None, known_object: bool,
         image_labels: str | None, classes_spec: str | None, lenient: bool, per_class_csv: str | None,
         json_out: str | None, matches_out: str | None, matlab_out: str | None, model: str, benchmark: str,
         n_boot: int,
         seed: int, ci_level: float, ci_method: str) -> None:
    """Score HICO-DET detections: mAP (Full, Rare, Non-rare) and per-class AP."""
    import numpy as np
    from rich.table import Table

    from hoibench._exceptions import ConfigError
    from hoibench._io import atomic_write_csv
    from hoibench.cli._common import reject_unused_options
    from hoibench.datasets import ground_truth_id, hico_class_subsets, resolve_dataset
    from hoibench.evaluation import (
        ClassesWithoutGroundTruthWarning,
        HICOProtocol,
        hico_mean_ap,
        match_hico_detections,
    )
    from hoibench.formats import load_predictions, read_image_labels, write_matlab_detections
    from hoibench.results import (
        GROUND_TRUTH_KEY,
        file_stem,
        hico_map_record,
        write_record,
        write_result,
    )

    if image_labels is not None and not known_object:
        raise ConfigError("--image-labels only applies with --known-object")
    ctx = click.get_current_context()
    if json_out is None and matches_out is None:
        reject_unused_options(ctx, "without --json or --matches (they are recorded in those files)", "model",
                              "benchmark")
    if not n_boot:
        reject_unused_options(ctx, "without --bootstrap", "seed", "ci_level", "ci_method")
    reject_unused_options(ctx, "in eval hico: no interval passed the coverage check for one model's mAP, "
                          "so it prints the bootstrap SE (docs/evaluation.md, 'Which interval'); intervals "
                          "of a difference between models: hoibench analyze compare", "ci_level", "ci_method")
    t0 = time.perf_counter()
    with err_console.status("reading the ground truth and the detections"):
        gt = resolve_dataset(gt_spec)
        loaded = load_predictions(pred_path, format=pred_format, vocab=gt.vocab, lenient=lenient,
                                  ground_truth=gt, box_shift=box_shift)
        labels = read_image_labels(image_labels, vocab=gt.vocab) if image_labels else None
    if loaded.detection is not None:  # a format told from a look-alike: say on what evidence
        err_console.print(f"format: {loaded.detection}", markup=False)
    for line in loaded.warnings:
        err_console.print(f"[yellow]warning:[/] {line}")
    t_read = time.perf_counter() - t0
    proto = HICOProtocol.preset(protocol)
    if pair_nms is not None:
        proto = proto.replace(pair_nms=pair_nms, name=f"{proto.name}+pair-nms")
    subsets, classes = ({}, None)
    if classes_spec:
        subsets, classes = hico_class_subsets(classes_spec, vocab=gt.vocab)
    t1 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:  # printed below, in this command's style
        warnings.simplefilter("always", ClassesWithoutGroundTruthWarning)
        res = hico_mean_ap(loaded.predictions, gt, protocol=proto, known_object=known_object,
                           image_labels=labels, class_subsets=subsets, classes=classes, lenient=lenient)
    for w in caught:
        if not issubclass(w.category, ClassesWithoutGroundTruthWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    eval_warnings = [str(w.message) for w in caught if issubclass(w.category, ClassesWithoutGroundTruthWarning)]
    t_eval = time.perf_counter() - t1
    boot = matches = None
    if n_boot or matches_out:
        matches = match_hico_detections(loaded.predictions, gt, protocol=proto, known_object=known_object,
                                        image_labels=labels, lenient=lenient)
    if n_boot:
        from hoibench.analysis import hico_map_bootstrap

        t2 = time.perf_counter()
        boot = hico_map_bootstrap(matches, gt, class_subsets=subsets, n_resamples=n_boot,
                                  random_state=seed, progress=True)
        t_boot = time.perf_counter() - t2
    benchmark = benchmark or Path(str(gt_spec)).name
    model = model or file_stem(pred_path)  # two unnamed runs must not share a name
    record = hico_map_record(res, model=model, benchmark=benchmark, classes_spec=classes_spec,
                             dropped=loaded.dropped, ci=None if boot is None else boot.to_ci(),
                             prediction_format=loaded.format, class_subsets=subsets,
                             **{GROUND_TRUTH_KEY: ground_truth_id(gt_spec)})
    dropped = record.result.n_dropped
    if matches_out:
        write_result(matches, matches_out, model=model, benchmark=benchmark)

    if matlab_out:
        write_matlab_detections(loaded.predictions, gt, matlab_out)
    if per_class_csv:
        rare = set(gt.vocab.rare_classes().tolist()) if gt.vocab.name == "hico-det" else set()
        sel = set() if classes is None else set(classes.tolist())
        atomic_write_csv(per_class_csv, ["hoi", "name", "n_gt", "n_detections", "ap", "rare", "selected"],
                         ([c, name, int(res.n_gt[c]), int(res.n_detections[c]),
                           None if ap != ap else f"{ap:.10f}", int(c in rare), int(c in sel)]
                          for c, (name, ap) in enumerate(zip(res.class_names, res.per_class_ap))))
    named_sets = dict(subsets)
    if gt.vocab.name == "hico-det":
        named_sets = {"rare": gt.vocab.rare_classes(),
                      "non_rare": np.setdiff1d(np.arange(gt.vocab.n_hois), gt.vocab.rare_classes()), **subsets}
    notes = _ground_truth_notes(record.result, gt_spec, classes_spec, named_sets, eval_warnings)
    if json_out == "-":  # stdout holds the JSON alone; the notes still reach the reader, on stderr
        echo_json(record.to_json())
        for line in notes:
            err_console.print(line)
        return
    if json_out:
        write_record(record, json_out)

    def pct(v: float) -> str:
        """A fraction printed as percent."""
        return "n/a" if v != v else f"{100 * v:.2f}"

    shown = record.result  # undefined subsets are NaN here, as in the JSON
    if shown.headline != "full":  # lead with the benchmark's number (an SG test set: unseen)
        n_head = len(subsets.get(shown.headline, ()))
        console.print(f"[bold]{_label(shown.headline)} mAP {pct(shown.headline_map)}[/]: the number this "
                      f"benchmark reports, the mean over its {n_head:,} {shown.headline} classes "
                      f"(--classes {classes_spec})")
    metrics = [shown.headline, *(m for m in ("full", "rare", "non_rare", *shown.subsets) if m != shown.headline)]
    table = Table(title=f"HICO-DET mAP ({res.protocol.name} protocol, "
                        f"{'Known-Object' if known_object else 'Default'})")
    if boot is not None:
        table.add_column("")
    for m in metrics:
        table.add_column(_label(m), justify="right")
    lead = ["mAP"] if boot is not None else []
    table.add_row(*lead, *(pct(shown.mean_ap(m)) for m in metrics))
    if boot is not None:
        cols = [boot.metrics.index(n) for n in metrics]
        table.add_row("bootstrap SE", *(pct(v) if v != v else f"±{100 * v:.2f}" for v in boot.se[cols]))
        table.add_row("resampling bias", *(pct(b) if b != b else f"{100 * b:+.2f}" for b in boot.bias[cols]))
        table.caption = ("bootstrap SE: spread of the mAP over resampled test images, not a confidence "
                         "interval (none passed the coverage check for one model's mAP); to compare "
                         "models use the paired intervals of `hoibench analyze compare`")
    console.print(table)
    n_det = len(loaded.predictions)
    console.print(f"{n_det:,} detections on {loaded.predictions.n_images:,} images "
                  f"({loaded.format} format); {gt.n_images:,} ground-truth images, "
                  f"{int(res.n_gt.sum()):,} pairs in {int((res.n_gt > 0).sum())} of {len(res.n_gt)} classes")
    for line in notes:
        console.print(line)
    if known_object:
        console.print(f"Known-Object image labels: {res.known_object_source}")
    for reason, count in dropped.items():
        console.print(f"not counted: {count:,} detections ({reason})")
    console.print(f"read {t_read:.2f} s, evaluated {t_eval:.2f} s"
                  + (f", bootstrap ({n_boot} image resamples, seed {seed}) {t_boot:.2f} s" if boot else ""))


def _label(metric: str) -> str:
    """A column name for an mAP key: ``non_rare`` -> ``Non-rare``."""
    return metric.replace("_", "-").capitalize()


def _ground_truth_notes(res: Any, gt_spec: str, classes_spec: str | None,
                        subsets: Mapping[str, Any], eval_warnings: list[str]) -> list[str]:
    """What the console says about classes without ground truth: the undefined means of
    ``subsets`` (name -> classes; n/a, never a number), how the protocol averages the classes
    without ground truth (the evaluator's warning under official/pocket), and where the
    benchmark's own number is on an SG split scored without ``--classes``."""
    from hoibench.formats import COMBINATIONS_FILE

    lines = []
    n_cls = len(res.n_gt)
    k = int((res.n_gt == 0).sum())
    for name, cls in subsets.items():
        if res.mean_ap(name) != res.mean_ap(name):
            lines.append(f"{_label(name)}: n/a, none of its {len(cls):,} classes has ground truth in this test "
                         "set (a mean over no scored class is undefined, not 0)")
    lines += [f"[yellow]warning:[/] {w}" for w in eval_warnings]
    if k and res.protocol.mean_over == "with_gt":
        lines.append(f"note: {k:,} of {n_cls:,} HOI classes have no ground-truth pairs in this test set; the "
                     f"{res.protocol.name} protocol leaves them out of every mean (Full averages the "
                     f"{n_cls - k:,} classes with ground truth)")
    split_dir = Path(str(gt_spec)).parent
    if k and not classes_spec and (split_dir / COMBINATIONS_FILE).is_file():
        lines.append(f"note: {gt_spec} is in an SG split folder: the number SG papers report is the mean over "
                     f"its unseen classes, --classes unseen:{split_dir}")
    return lines
