"""``hoibench eval vcoco``: V-COCO agent AP and role AP (scenarios 1 and 2), as ``vsrl_eval.py``.

Thin: read the ground truth and the detections with :mod:`hoibench.formats`, score them with
:func:`hoibench.evaluation.vcoco_role_ap`, render a summary and the per-class table.
"""

from __future__ import annotations

import time
from pathlib import Path

import click

from hoibench.cli._common import console, echo_json, err_console

__all__ = ["vcoco"]


@click.command("vcoco")
@click.option("--gt", "gt_spec", required=True, metavar="FILE_OR_DATASET",
              help="Role ground truth: a hoibench V-COCO ground-truth JSON, the official vcoco_*.json "
                   "(with --coco-instances), or v-coco:test / a pair-annotation file (incomplete).")
@click.option("--pred", "pred_path", required=True, type=click.Path(exists=True, dir_okay=False),
              help="Detections: hoibench V-COCO JSON, or vsrl_eval.py's list of dicts (pickle or JSON).")
@click.option("--coco-instances", type=click.Path(exists=True, dir_okay=False), default=None,
              help="COCO instances_*.json holding the images; makes --gt the official vcoco_*.json.")
@click.option("--save-gt", type=click.Path(dir_okay=False), default=None,
              help="Also write the ground truth in the hoibench layout (to skip the COCO step next time).")
@click.option("--scenario", type=click.Choice(["1", "2", "both"]), default="both", show_default=True)
@click.option("--iou-threshold", type=float, default=0.5, show_default=True)
@click.option("--lenient", is_flag=True, help="Drop bad detections (and ones on unknown images) and count them.")
@click.option("--per-class", "per_class_csv", type=click.Path(dir_okay=False), default=None,
              help="Write the per-class table as CSV.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False), default=None, is_flag=False, flag_value="-", metavar="PATH|-",
              help="Write the results object (see docs/interfaces.md); '-' prints it instead of tables.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
              help="Write a bar chart of the per-class APs (PNG).")
@click.option("--model", default="", help="Model name recorded in --json output [default: the --pred file's stem].")
@click.option("--benchmark", default="", help="Benchmark name recorded in --json output [default: the --gt name].")
@click.option("--quiet", is_flag=True, help="Summary only, no per-class table.")
def vcoco(gt_spec: str, pred_path: str, coco_instances: str | None, save_gt: str | None, scenario: str,
          iou_threshold: float, lenient: bool, per_class_csv: str | None, json_out: str | None,
          plot_path: str | None, model: str, benchmark: str, quiet: bool) -> None:
    """Score V-COCO detections: agent AP, role AP over 24 and 25 (action, role) pairs."""
    from rich.table import Table

    from hoibench._io import atomic_write_bytes, atomic_write_csv
    from hoibench.cli._common import reject_unused_options
    from hoibench.datasets import ground_truth_id, resolve_vcoco_ground_truth
    from hoibench.evaluation import vcoco_role_ap
    from hoibench.formats import (
        read_vcoco_detections,
        vcoco_ground_truth_from_official,
        write_vcoco_ground_truth,
    )
    from hoibench.results import (
        GROUND_TRUTH_KEY,
        ResultRecord,
        file_stem,
        write_record,
    )

    if json_out is None:
        reject_unused_options(click.get_current_context(), "without --json (they are recorded in the results "
                              "object)", "model", "benchmark")
    scenarios = (1, 2) if scenario == "both" else (int(scenario),)
    t0 = time.perf_counter()
    with err_console.status("reading the ground truth and the detections"):
        if coco_instances is not None:
            gt = vcoco_ground_truth_from_official(gt_spec, coco_instances)
        else:
            gt = resolve_vcoco_ground_truth(gt_spec)
        if save_gt:
            write_vcoco_ground_truth(gt, save_gt)
        loaded = read_vcoco_detections(pred_path, lenient=lenient).restrict_to(gt, lenient=lenient)
    t1 = time.perf_counter()
    # the reader has checked every row and restrict_to every image id: the metric need not repeat it
    res = vcoco_role_ap(loaded.detections, gt, iou_threshold=iou_threshold, scenarios=scenarios,
                        validate_args=False)
    t2 = time.perf_counter()
    if not gt.complete:
        err_console.print("[yellow]warning:[/] this ground truth comes from pair annotations and is incomplete "
                          "(no ignored people; agent-only actions and positives without a role object only where "
                          "the file lists them as pairs with object_id -1); "
                          "numbers differ from the official protocol, see docs/evaluation.md")
    for reason, n in sorted(loaded.dropped.items()):
        err_console.print(f"dropped {n} detections: {reason}")

    record = ResultRecord(res, model or file_stem(pred_path), benchmark or Path(str(gt_spec)).name, {
        "ground_truth": gt.source, GROUND_TRUTH_KEY: ground_truth_id(gt_spec, *([coco_instances] if coco_instances else [])), "predictions": pred_path,
        "layout": loaded.layout,
        "prediction_format": loaded.layout,
        "n_detections": len(loaded.detections), "dropped": loaded.dropped})
    rows = res.per_class_rows()
    if per_class_csv:
        fields = ["kind", "class", "n_pos", "n_det", "ap", *[f"ap_scenario_{s}" for s in res.scenarios]]
        atomic_write_csv(per_class_csv, fields, ([r.get(k) for k in fields] for r in rows))
    if plot_path:
        from hoibench.reports import vcoco_ap_figure

        atomic_write_bytes(plot_path, vcoco_ap_figure(res, title=f"V-COCO AP per class: {Path(pred_path).name}").png)
    if json_out == "-":
        echo_json(record.to_json())
        return
    if json_out:
        write_record(record, json_out)

    def pct(v: float | None) -> str:
        return "—" if v is None else f"{100 * v:.2f}"

    if not quiet:
        table = Table(title="V-COCO per class (AP %)")
        for col in ("class", "#pos", "#det", "agent AP", *[f"role AP s{s}" for s in res.scenarios]):
            table.add_column(col, justify="left" if col == "class" else "right")
        for r in rows:
            if r["kind"] == "agent":
                table.add_row(r["class"], str(r["n_pos"]), str(r["n_det"]), pct(r["ap"]),
                              *["" for _ in res.scenarios])
            else:
                table.add_row(r["class"], str(r["n_pos"]), str(r["n_det"]), "",
                              *[pct(r[f"ap_scenario_{s}"]) for s in res.scenarios])
        console.print(table)
    summary = Table(title=f"V-COCO ({gt.n_images} images, {len(loaded.detections)} detections, "
                          f"IoU >= {iou_threshold:g})")
    summary.add_column("metric")
    summary.add_column("%", justify="right")
    summary.add_row("agent AP (mean over actions)", pct(res.agent_map))
    for s in res.scenarios:
        summary.add_row(f"role AP scenario {s} (24 pairs)", pct(res.role_map(s)))
        summary.add_row(f"role AP scenario {s} (25 pairs, vsrl_eval print)", pct(res.role_map(s, pairs=25)))
    console.print(summary)
    console.print(f"read {t1 - t0:.2f} s, evaluated {t2 - t1:.2f} s")

