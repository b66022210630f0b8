"""``hoibench analyze``: re-evaluation analyses over mAP result files (B-RIGHT section 5, Figure 3).

Commands read the JSON files of ``hoibench eval hico --json`` (kind ``hico_map`` in
``docs/interfaces.md``), print a Markdown table and write Markdown, CSV and PNG to ``--out``.
The analyses return fractions; everything printed or written here is in percent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from hoibench.cli._common import confidence_interval_options, console, err_console
from hoibench.cli.analyze_bright import embeddings_cmd, prompt_ablation_cmd

__all__ = ["analyze"]


@click.group("analyze")
def analyze() -> None:
    """Class-AP spread, ranking shifts between benchmarks, TP→FP sensitivity, model comparison."""


def _map_results(paths: tuple[str, ...]) -> list[Any]:
    """The mAP records (kind ``hico_map``) of the files; records of other kinds are skipped."""
    from hoibench._exceptions import ConfigError
    from hoibench.evaluation import HICOMapResult
    from hoibench.results import read_results

    results = [r for r in read_results(list(paths)) if isinstance(r.result, HICOMapResult)]
    if not results:
        raise ConfigError(f"no mAP results (kind 'hico_map') in {', '.join(paths)}")
    return results


def _benchmark(option: str, name: str, results: list[Any]) -> str:
    """The benchmark of the results that ``name`` means, case-insensitively (``hico-det`` finds
    ``HICO-DET``); one line naming the benchmarks there are when none matches."""
    from hoibench._exceptions import ConfigError

    names = list(dict.fromkeys(r.benchmark for r in results))
    if name in names:
        return name
    found = [b for b in names if b.lower() == name.strip().lower()]
    if len(found) == 1:
        return found[0]
    raise ConfigError(f"{option} {name!r}: no result on that benchmark"
                      + (f" (several differ only in case: {', '.join(found)})" if found else "")
                      + f"; benchmarks: {', '.join(names)}")


def _read_classes(path: str | None, results: list[Any]) -> list[int] | None:
    """Class indices from a ``classes.json`` of ``hoibench split balanced``, a JSON list or one
    id per line (:func:`hoibench.formats.read_class_list`), checked against the results' classes."""
    if path is None:
        return None
    from hoibench.formats import read_class_list

    sizes = {len(r.result.per_class_ap) for r in results if r.result.per_class_ap is not None}
    return read_class_list(path, n_classes=min(sizes) if sizes else None).tolist()


def _write(out_dir: str | None, tables: list[Any], figures: list[Any]) -> None:
    from hoibench._io import atomic_write_bytes

    if out_dir is None:
        return
    out = Path(out_dir)
    for t in tables:
        atomic_write_bytes(out / f"{t.name}.md", (f"## {t.title}\n\n" + t.to_markdown() +
                                                  (f"\n{t.caption}\n" if t.caption else "")).encode())
        atomic_write_bytes(out / f"{t.name}.csv", t.to_csv().encode())
    for f in figures:
        atomic_write_bytes(out / f"{f.name}.png", f.png)
    console.print(f"wrote {len(tables) * 2 + len(figures)} files to {out}")


@analyze.command("class-ap")
@click.argument("results", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--classes", "classes_file", default=None, type=click.Path(dir_okay=False),
              help="Restrict to these classes (balanced classes.json or a JSON list of indices).")
@click.option("--reference", default=None, help="Benchmark to compare variances against (e.g. hico-det).")
@click.option("--other", default=None, help="Benchmark whose variance is divided by the reference's.")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Write class-ap-spread.{md,csv} and class-ap-boxplot.png here.")
def class_ap(results: tuple[str, ...], classes_file: str | None, reference: str | None,
             other: str | None, out_dir: str | None) -> None:
    """Class-AP variance and IQR per model and benchmark, with box plots (Figure 6)."""
    from hoibench._exceptions import ConfigError
    from hoibench.reports import class_ap_boxplot_figure, class_ap_spread_table

    if (reference is None) != (other is None):
        raise ConfigError("--reference and --other go together")
    rs = _map_results(results)
    if reference is not None and other is not None:
        reference, other = _benchmark("--reference", reference, rs), _benchmark("--other", other, rs)
    classes = _read_classes(classes_file, rs)
    table = class_ap_spread_table(rs, classes=classes, reference=reference, other=other)
    console.print(table.to_markdown(), markup=False)
    figures = [class_ap_boxplot_figure(rs, classes=classes)] if out_dir else []
    _write(out_dir, [table], figures)


@analyze.command("ranking")
@click.argument("results", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--reference", required=True, help="Benchmark of the reference ranking (e.g. hico-det).")
@click.option("--other", required=True, help="Benchmark of the new ranking (e.g. b-right).")
@click.option("--metric", default=None,
              help="Ranked score: full, rare, non_rare or a subset name of the result files "
                   "[default: each result's headline, as the report ranks].")
@click.option("--bootstrap", "n_resamples", type=int, default=0, show_default=True,
              help="Class-bootstrap replicates for rank stability (0: off).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap.")
@click.option("--zero-shot", "zero_shot", multiple=True, metavar="BENCHMARK",
              help="Add Table 3's zero-shot column of this benchmark: each model's unseen mAP there "
                   "(results of eval hico --classes rf-uc or zero-shot:DIR); repeat, e.g. for RF-UC "
                   "and the B-RIGHT zero-shot set.")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Write ranking-shift.{md,csv} (and rank-stability-*.{md,csv}) here.")
def ranking(results: tuple[str, ...], reference: str, other: str, metric: str | None, n_resamples: int,
            seed: int, zero_shot: tuple[str, ...], out_dir: str | None) -> None:
    """Ranking shift of models between two benchmarks (Table 3, with its zero-shot columns),
    optional rank stability."""
    from hoibench._exceptions import ConfigError
    from hoibench._io import slug
    from hoibench.analysis import (
        class_ap_spread,
        class_ap_values,
        kendall_tau,
        rank_stability,
        ranking_shift,
    )
    from hoibench.cli._common import reject_unused_options
    from hoibench.reports import (
        Table,
        ranking_shift_figure,
        ranking_shift_markdown,
        ranking_shift_table,
    )

    if not n_resamples:
        reject_unused_options(click.get_current_context(), "without --bootstrap", "seed")
    rs = _map_results(results)
    reference, other = _benchmark("--reference", reference, rs), _benchmark("--other", other, rs)
    scores: dict[str, dict[str, float]] = {reference: {}, other: {}}
    for r in rs:
        if r.benchmark not in scores:
            continue
        if metric is not None and metric not in ("full", "rare", "non_rare", *r.result.subsets):
            raise ConfigError(f"{r.source}: no {metric!r} score (have full, rare, non_rare, "
                              f"{', '.join(r.result.subsets) or 'no subsets'})")
        value = r.result.headline_map if metric is None else r.result.mean_ap(metric)
        if r.model in scores[r.benchmark]:
            raise ConfigError(f"{r.source}: a second result for {r.model} on {r.benchmark}")
        scores[r.benchmark][r.model] = value
    rows = ranking_shift(scores[reference], scores[other])
    zs = _zero_shot_columns(zero_shot, rs, [r.model for r in rows])
    table = ranking_shift_table(rows, reference=reference, other=other, zero_shot=zs)
    tau = kendall_tau([r.map_reference for r in rows], [r.map_other for r in rows])
    console.print(ranking_shift_markdown(rows, reference=reference, other=other, zero_shot=zs), markup=False)
    console.print("Kendall tau between the rankings: "
                  + ("n/a (every model ties on one benchmark)" if tau != tau else f"{tau:.3f}"))
    tables = [table]
    if n_resamples:
        for bench in (reference, other):
            aps = {r.model: r.result.per_class_ap for r in rs
                   if r.benchmark == bench and r.result.per_class_ap is not None}
            if len(aps) < 2:
                raise ConfigError(f"rank stability on {bench} needs per-class AP of at least two models")
            stab = rank_stability(aps, benchmark=bench, n_resamples=n_resamples, random_state=seed)
            t = Table.from_records(f"rank-stability-{slug(bench, keep='_.', default='benchmark')}",
                                   f"Rank stability on {bench} "
                                   f"({n_resamples} class-bootstrap replicates, seed {seed})",
                                   [{**s.to_dict(), "map": 100 * s.map} for s in stab],
                                   caption="rank_low/rank_high: 95% bootstrap interval of the rank; "
                                           "p_same_rank: share of replicates with the observed rank.")
            console.print(t.to_markdown(), markup=False)
            tables.append(t)
    figures = []
    if out_dir:
        spread = {(r.model, r.benchmark): class_ap_spread(class_ap_values(r.result)).variance
                  for r in rs if r.benchmark in scores and r.result.per_class_ap is not None}
        figures.append(ranking_shift_figure(rows, reference=reference, other=other, spread=spread))
    _write(out_dir, tables, figures)


def _zero_shot_columns(benchmarks: tuple[str, ...], results: list[Any], ranked: list[str],
                       ) -> dict[str, dict[str, float]]:
    """Table 3's zero-shot columns: benchmark -> model -> unseen mAP (fraction). A result there
    without an unseen mAP (scored without ``--classes rf-uc`` / ``zero-shot:DIR``) is one error
    line; models outside the ranking are named, not silently dropped."""
    from hoibench._exceptions import ConfigError

    cols: dict[str, dict[str, float]] = {}
    for name in benchmarks:
        bench = _benchmark("--zero-shot", name, results)
        if bench in cols:
            raise ConfigError(f"--zero-shot {name!r} given twice")
        col = cols[bench] = {}
        for r in results:
            if r.benchmark != bench:
                continue
            if "unseen" not in r.result.subsets:
                raise ConfigError(f"{r.source}: --zero-shot {bench}: no unseen mAP in this result (score it "
                                  f"with eval hico --classes rf-uc, or --classes zero-shot:DIR for the B-RIGHT "
                                  f"zero-shot set)")
            if r.model in col:
                raise ConfigError(f"{r.source}: a second result for {r.model} on {bench}")
            col[r.model] = r.result.mean_ap("unseen")
        extra = sorted(set(col) - set(ranked))
        if extra:
            console.print(f"zero-shot {bench}: not in the ranking (no result on both ranked benchmarks), "
                          f"left out: {', '.join(extra)}")
    return cols


@analyze.command("sensitivity")
@click.option("--predictions", default=None, type=click.Path(dir_okay=False),
              help="Detections of one model (any format `hoibench eval hico` reads).")
@click.option("--dataset", default=None, metavar="DATASET_OR_FILE",
              help="Ground truth for --predictions (e.g. hico-det:test or a balanced test_hico.json).")
@click.option("--protocol", default="official", show_default=True,
              help="Matching protocol of the evaluator (official, qpic, pocket).")
@click.option("--matches", "matches_file", default=None, type=click.Path(dir_okay=False),
              help="Instead: matched detections (kind 'hoi_matches', see docs/interfaces.md).")
@click.option("--ap-method", type=click.Choice(["voc11", "all_point"]), default="voc11", show_default=True)
@click.option("--thresholds", type=click.Choice(["matlab", "linspace", "arange", "decimal"]),
              default=None, help="11-point recall thresholds [default: the protocol's, else matlab].")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Write tp-fp-sensitivity.{md,csv,png} here.")
def sensitivity(predictions: str | None, dataset: str | None, protocol: str, matches_file: str | None,
                ap_method: str, thresholds: str | None, out_dir: str | None) -> None:
    """AP drop when each class's top true positive becomes a false positive (Figure 3)."""
    import numpy as np

    from hoibench._exceptions import ConfigError
    from hoibench.analysis import sensitivity_from_matches
    from hoibench.cli._common import reject_unused_options
    from hoibench.reports import sensitivity_figure, sensitivity_table

    if (matches_file is None) == (predictions is None):
        raise ConfigError("give either --predictions with --dataset, or --matches")
    if ap_method == "all_point":
        reject_unused_options(click.get_current_context(), "with --ap-method all_point (no recall thresholds)",
                              "thresholds")
    if matches_file is not None:
        reject_unused_options(click.get_current_context(), "with --matches (already matched)", "dataset",
                              "protocol")
        from hoibench.evaluation import HICOMatches
        from hoibench.results import read_result

        rec = read_result(matches_file)
        if not isinstance(rec.result, HICOMatches):
            raise ConfigError(f"{matches_file}: --matches needs kind 'hoi_matches' (hoibench eval hico "
                              f"--matches); this file holds {rec.kind!r}")
        thresholds = thresholds or rec.result.protocol.recall_thresholds
        res = sensitivity_from_matches(rec.result, class_names=rec.result.class_names, ap_method=ap_method,
                                       thresholds=thresholds)
    else:
        if dataset is None:
            raise ConfigError("--predictions needs --dataset (the ground truth)")
        from hoibench.datasets import resolve_dataset
        from hoibench.evaluation import HICOProtocol, match_hico_detections
        from hoibench.formats import read_predictions

        target = resolve_dataset(dataset)
        preds = read_predictions(predictions, vocab=target.vocab)
        with console.status("matching detections", spinner="dots"):
            matches = match_hico_detections(preds, target, protocol=protocol)
        thresholds = thresholds or HICOProtocol.preset(protocol).recall_thresholds
        names = tuple(target.vocab.hoi_name(h) for h in range(target.vocab.n_hois))
        res = sensitivity_from_matches(matches, class_names=names, ap_method=ap_method,
                                       thresholds=thresholds)
    table = sensitivity_table(res)
    rel = res.relative_drop
    ok = ~np.isnan(rel)
    for lo, hi in ((1, 10), (10, 50), (50, None)):
        sel = ok & (res.n_gt >= lo) & (res.n_gt < (hi or np.inf))
        if sel.any():
            label = f"{lo}-{hi - 1}" if hi else f">={lo}"
            console.print(f"classes with {label} test instances: {int(sel.sum())}, median relative AP "
                          f"drop {100 * np.median(rel[sel]):.1f}%")
    figures = [sensitivity_figure(res, ap_method=ap_method, thresholds=thresholds)] if out_dir else []
    _write(out_dir, [table], figures)


@analyze.command("failures")
@click.option("--matches", "matches_file", required=True, type=click.Path(exists=True, dir_okay=False),
              help="Matched detections of `hoibench eval hico --matches` (kind 'hoi_matches').")
@click.option("--gt", "gt_spec", required=True, metavar="FILE_OR_DATASET",
              help="The ground truth eval hico was given (a bundled dataset or a file).")
@click.option("--pred", "pred_path", required=True, type=click.Path(exists=True),
              help="The detections eval hico was given (their boxes are drawn).")
@click.option("--format", "pred_format", type=click.Choice(["hoibench", "generic", "qpic", "cdn", "gen-vlkt", "ho-rcnn"]),
              default=None, help="Prediction format, as given to eval hico (detected when omitted).")
@click.option("--lenient", is_flag=True, help="As given to eval hico (the detections it dropped are not in the matches).")
@click.option("--class", "hoi_class", default=None, metavar="HOI",
              help="Draw the top-scored detections of this HOI class (index or 'verb object') on their images.")
@click.option("--image", "image_name", default=None, metavar="FILE_NAME",
              help="Instead: draw the top-scored detections of this image (any class).")
@click.option("--images", "images_dir", default=None, type=click.Path(exists=True, file_okay=False),
              help="Folder of the images [default: a blank canvas of each image's size, said in the caption].")
@click.option("--top", "top_k", type=click.IntRange(min=1), default=6, show_default=True,
              help="Detections drawn (highest scores first).")
@click.option("--fp-only", is_flag=True, help="Draw only false positives (the counts still cover every detection).")
@click.option("--low-iou", type=click.FloatRange(0, 0.5, min_open=True, max_open=True), default=0.1,
              show_default=True, help="Least IoU (human and object) with a same-class pair for 'poor_localisation'.")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Write failures-*.png and the tables failures-*-{detections,categories}.{md,csv} here.")
def failures(matches_file: str, gt_spec: str, pred_path: str, pred_format: str | None, lenient: bool,
             hoi_class: str | None, image_name: str | None, images_dir: str | None, top_k: int, fp_only: bool,
             low_iou: float, out_dir: str) -> None:
    """Failure cases (the SG paper's Figure 3): ground truth and detections drawn together, each
    detection marked TP or FP by kind (duplicate, poor localisation, wrong verb, wrong object, both,
    background), for one class or one image."""
    import numpy as np

    from hoibench._exceptions import ConfigError
    from hoibench._io import slug
    from hoibench.analysis import classify_detections
    from hoibench.cli._paper_inputs import hoi_class_of
    from hoibench.datasets import resolve_dataset
    from hoibench.evaluation import HICOMatches
    from hoibench.formats import load_predictions
    from hoibench.reports import failure_cases_section
    from hoibench.results import read_result

    if (hoi_class is None) == (image_name is None):
        raise ConfigError("give one of --class or --image")
    rec = read_result(matches_file)
    if not isinstance(rec.result, HICOMatches):
        raise ConfigError(f"{matches_file}: --matches needs kind 'hoi_matches' (hoibench eval hico --matches); "
                          f"this file holds {rec.kind!r}")
    m = rec.result
    gt = resolve_dataset(gt_spec)
    if m.n_classes != gt.vocab.n_hois:
        raise ConfigError(f"{matches_file}: {m.n_classes} HOI classes, but --gt {gt_spec} has {gt.vocab.n_hois}")
    preds = load_predictions(pred_path, format=pred_format, vocab=gt.vocab, lenient=lenient,
                             ground_truth=gt).predictions
    if hoi_class is not None:
        c = hoi_class_of(hoi_class, gt.vocab, "--class")
        rows = np.arange(m.class_offsets[c], m.class_offsets[c + 1])  # the evaluator's ranked order
        what, name = f"class {c} ({gt.vocab.hoi_name(c)})", f"failures-class-{c}"
    else:
        index = {f: i for i, f in enumerate(gt.file_names)}
        if image_name not in index:
            raise ConfigError(f"--image {image_name!r} is not an image of --gt {gt_spec}")
        rows = np.flatnonzero(m.image_index == index[image_name])
        rows = rows[np.argsort(-m.scores[rows], kind="stable")]
        what, name = f"image {image_name}", f"failures-image-{slug(Path(image_name).stem)}"
    if not len(rows):
        raise ConfigError(f"{matches_file}: no counted detection of {what}")
    verdicts = classify_detections(m, preds, gt, rows=rows, low_iou=low_iou, source=matches_file)
    drawn = [v for v in verdicts if not fp_only or v.category != "tp"][:top_k]
    if not drawn:
        raise ConfigError(f"no false positive among the {len(verdicts):,} detections of {what}")
    model = rec.model or Path(pred_path).name.split(".")[0]
    section, blank = failure_cases_section(drawn, preds, gt, images_dir=images_dir, counts=verdicts,
                                           title=f"{model}: failure cases of {what}", name=name)
    console.print(section.tables[1].to_markdown(), markup=False)
    if blank:
        console.print(f"{len(blank)} image(s) drawn on a blank canvas of the image's size ("
                      + ("no --images given" if images_dir is None else f"not in {images_dir}") + ")")
    _write(out_dir, section.tables, section.figures)


@analyze.command("compare")
@click.option("--gt", "gt_spec", required=True, metavar="FILE_OR_DATASET",
              help="Ground truth shared by the models: a bundled dataset (hico-det:test) or a file.")
@click.option("--pred", "pred_paths", required=True, multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Detections of one model (any format `hoibench eval hico` reads); give two or more.")
@click.option("--format", "pred_formats", multiple=True,
              type=click.Choice(["hoibench", "generic", "qpic", "cdn", "gen-vlkt"]),
              help="Prediction format (as `eval hico --format`): once for every --pred, or once per --pred in "
                   "order (default: detected from each file's content).")
@click.option("--name", "names", multiple=True,
              help="Model names, in --pred order (default: the file names without extension).")
@click.option("--protocol", type=click.Choice(["official", "qpic", "pocket", "cdn"]), default="official",
              show_default=True, help="Evaluation protocol (see `hoibench eval hico`).")
@click.option("--known-object", is_flag=True, help="Known-Object setting instead of Default.")
@click.option("--classes", "classes_spec", default=None, metavar="SPEC",
              help="Also compare on a class subset (as `hoibench eval hico --classes`).")
@click.option("--metric", default="full", show_default=True,
              help="Score compared and ranked: full, rare, non_rare or a subset of --classes.")
@click.option("--reference", default=None, help="Compare every model against this one only.")
@click.option("--bootstrap", "n_boot", type=click.IntRange(min=1), default=1000, show_default=True,
              metavar="N", help="Bootstrap resamples of the test images (the same for every model).")
@confidence_interval_options
@click.option("--lenient", is_flag=True, help="Drop bad detections instead of failing.")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Write paired-difference-METRIC, map-se, rank-stability-METRIC (.md, .csv) and "
                   "rank-distribution-METRIC.png here.")
def compare(gt_spec: str, pred_paths: tuple[str, ...], pred_formats: tuple[str, ...], names: tuple[str, ...],
            protocol: str,
            known_object: bool, classes_spec: str | None, metric: str, reference: str | None, n_boot: int,
            seed: int, ci_level: float, ci_method: str, lenient: bool, out_dir: str | None) -> None:
    """Paired bootstrap comparison of models on the same test images, and rank stability."""
    from hoibench._exceptions import ConfigError
    from hoibench.analysis import compare_hico_models
    from hoibench.datasets import hico_class_subsets, resolve_dataset
    from hoibench.formats import load_predictions
    from hoibench.reports import (
        Table,
        paired_difference_table,
        rank_distribution_figure,
        rank_distribution_table,
    )

    if len(pred_paths) < 2:
        raise ConfigError("analyze compare needs at least two --pred files")
    if names and len(names) != len(pred_paths):
        raise ConfigError(f"--name given {len(names)} times for {len(pred_paths)} --pred files")
    if len(pred_formats) not in (0, 1, len(pred_paths)):
        raise ConfigError(f"--format given {len(pred_formats)} times for {len(pred_paths)} --pred files "
                          "(give it once for all, or once per --pred)")
    formats: list[str | None] = (list(pred_formats) if len(pred_formats) > 1
                                 else [pred_formats[0] if pred_formats else None] * len(pred_paths))
    labels = list(names) or [Path(p).name.split(".")[0] for p in pred_paths]
    if len(set(labels)) != len(labels):
        raise ConfigError(f"model names must differ (got {labels}); use --name")
    if reference is not None and reference not in labels:
        raise ConfigError(f"--reference must be one of {', '.join(labels)}; got {reference!r}")
    gt = resolve_dataset(gt_spec)
    subsets = hico_class_subsets(classes_spec, vocab=gt.vocab)[0] if classes_spec else {}
    if metric not in ("full", "rare", "non_rare", *subsets):
        raise ConfigError(f"--metric must be one of full, rare, non_rare{''.join(', ' + k for k in subsets)}; "
                          f"got {metric!r}")
    preds = {}
    with console.status("reading the detections"):
        for label, path, fmt in zip(labels, pred_paths, formats):
            loaded = load_predictions(path, format=fmt, vocab=gt.vocab, lenient=lenient)
            preds[label] = loaded.predictions
            if loaded.detection is not None:  # a format told from a look-alike: say on what evidence
                err_console.print(f"format of {label}: {loaded.detection}", markup=False)
            for line in loaded.warnings:
                err_console.print(f"[yellow]warning:[/] {line}")
    cmp = compare_hico_models(preds, gt, protocol=protocol, known_object=known_object, class_subsets=subsets,
                              n_resamples=n_boot, confidence=ci_level / 100.0, random_state=seed,
                              lenient=lenient, progress=True)
    recs = [{k: v if k == "model" else 100 * v for k, v in rec.items()}  # fractions -> percent
            for rec in cmp.map_ci()]
    # the paired differences first: the one interval of this command that passed the coverage check
    tables = [paired_difference_table(cmp, metric, reference=reference, method=ci_method),
              Table.from_records("map-se", f"mAP with its bootstrap standard error ({protocol} protocol)",
                                 recs, caption=f"{n_boot} resamples of the {gt.n_images:,} test images "
                                               f"(seed {seed}); <metric>_se: bootstrap standard error, not a "
                                               "confidence interval (none passed the coverage check for one "
                                               "model's mAP; docs/evaluation.md, 'Which interval'); "
                                               "<metric>_bias: mean replicate mAP − mAP."),
              rank_distribution_table(cmp, metric)]
    for t in tables:
        console.print(f"## {t.title}\n\n{t.to_markdown()}", markup=False)
    figures = [rank_distribution_figure(cmp, metric)] if out_dir else []
    _write(out_dir, tables, figures)


# ------------------------------------------------------------------ the papers' remaining figures
@analyze.command("scenes")
@click.option("--questions", "questions_path", required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--answers", "answers_paths", required=True, multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Answers JSONL of one model (repeat per model).")
@click.option("--name", "names", multiple=True, help="Model names in --answers order (default: the file's "
                                                     "header 'model', else its stem).")
@click.option("--dataset", required=True, metavar="DATASET_OR_FILE",
              help="Annotations of the questions' images (e.g. hico-det:test).")
@click.option("--setting", type=click.IntRange(1, 3), default=None, help="Score only questions of this setting.")
@click.option("--person-iou", type=click.FloatRange(0, 1, min_open=True), default=0.5, show_default=True,
              help="Subject boxes overlapping this much are one person.")
@click.option("--border-margin", type=click.FloatRange(min=0), default=2.0, show_default=True,
              help="Pixels from the border within which a person's box counts as truncated.")
@click.option("--overlap", type=click.FloatRange(0, 1, min_open=True), default=0.3, show_default=True,
              help="Share of the target's box another person's box must cover to count as occluding.")
@click.option("--metric", type=click.Choice(["macro_f1", "instance_f1", "micro_f1", "exact_match",
                                              "avg_precision", "avg_recall"]),
              default="instance_f1", show_default=True, help="Metric of the figure.")
@click.option("--bootstrap", "n_bootstrap", type=click.IntRange(min=0), default=0, show_default=True,
              help="Bootstrap resamples of each bin's questions for confidence intervals (0: none).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap.")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Write mcq-scenes.{md,csv,json} and mcq-scenes-METRIC.png (METRIC with - for _) here.")
def scenes(questions_path: str, answers_paths: tuple[str, ...], names: tuple[str, ...], dataset: str,
           setting: int | None, person_iou: float, border_margin: float, overlap: float, metric: str,
           n_bootstrap: int, seed: int, out_dir: str | None) -> None:
    """Multiple-choice metrics by scene type: single person, several people with different or the
    same interactions, occluded or truncated (Finding 2, Figures 5-6)."""
    from hoibench._io import atomic_write_json
    from hoibench.analysis import mcq_scene_breakdown
    from hoibench.cli._common import reject_unused_options
    from hoibench.cli._paper_inputs import model_answers
    from hoibench.datasets import resolve_dataset
    from hoibench.reports import scene_breakdown_figure, scene_breakdown_table

    if not n_bootstrap:
        reject_unused_options(click.get_current_context(), "without --bootstrap", "seed")
    qs, by_model = model_answers(questions_path, answers_paths, names, setting)
    bd = mcq_scene_breakdown(by_model, qs, resolve_dataset(dataset), person_iou=person_iou,
                             border_margin=border_margin, overlap=overlap, n_bootstrap=n_bootstrap,
                             random_state=seed)
    table = scene_breakdown_table(bd)
    console.print(table.to_markdown(), markup=False)
    if bd.not_annotated:
        console.print(f"note: {bd.not_annotated} questions have no annotated image in {dataset}")
    if out_dir:
        atomic_write_json(Path(out_dir) / "mcq-scenes.json", bd.to_dict(), indent=True)
    _write(out_dir, [table], [scene_breakdown_figure(bd, metric=metric)] if out_dir else [])


@analyze.command("sg-tables")
@click.argument("results", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Write sg-table-FAMILY.{md,csv} and sg-figure-FAMILY.png here.")
def sg_tables(results: tuple[str, ...], out_dir: str | None) -> None:
    """Train and test mAP per SG split with the mean and std over the splits (SG paper Tables 3/4,
    Figure 2). Benchmarks are named hico-det, hico-det-sg1, ..., with ':train' for train data."""
    from hoibench._exceptions import ConfigError
    from hoibench.analysis import sg_split_tables
    from hoibench.reports import sg_split_figure, sg_split_table
    from hoibench.results import read_results

    found = sg_split_tables(read_results(list(results)))
    if not found:
        raise ConfigError(f"no result on an SG split (a benchmark named like hico-det-sg1) in {', '.join(results)}")
    tables = [sg_split_table(t) for t in found]
    for t in tables:
        console.print(f"## {t.title}\n\n{t.to_markdown()}", markup=False)
    _write(out_dir, tables, [sg_split_figure(t) for t in found if any(p == "test" for _, p in t.values)]
           if out_dir else [])


@analyze.command("class-counts")
@click.option("--dataset", "specs", required=True, multiple=True, metavar="FOLDER_OR_FILE",
              help="A split folder (trainval_hico.json + test_hico.json: B-RIGHT, SG, zero-shot), a "
                   "bundled dataset (hico-det), or the train file then the test file.")
@click.option("--unseen", default=None, metavar="PROTOCOL_OR_FILE",
              help="Unseen classes (rf-uc, nf-uc, uo, uv, a split folder or an id list); default: the "
                   "folder's test_combinations.json when it has one.")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Write class-counts.{md,csv}, class-counts-per-class.csv and class-counts.png here.")
def class_counts(specs: tuple[str, ...], unseen: str | None, out_dir: str | None) -> None:
    """Per-class train and test instances and their ratio (B-RIGHT Figure 2); with unseen classes,
    the imbalance of a zero-shot split (Figure S6)."""
    from hoibench.cli._paper_inputs import class_counts_of
    from hoibench.reports import Table, class_counts_figure, class_counts_table

    counts = class_counts_of(specs, unseen)
    name = Path(specs[0]).name if len(specs) == 1 else Path(specs[0]).stem
    table = class_counts_table(counts, name="class-counts", title=f"Class imbalance of {name}")
    console.print(table.to_markdown(), markup=False)
    per_class = Table.from_records("class-counts-per-class", f"Instances per class: {name}", counts.rows(),
                                   columns=("hoi", "name", "train", "test", "train_over_test", "unseen"))
    figures = [class_counts_figure(counts, name="class-counts", title=f"Instances per class: {name}")] if out_dir else []
    _write(out_dir, [table, per_class], figures)


@analyze.command("augmentation-counts")
@click.argument("folders", nargs=-1, required=True, metavar="[SPLIT=]DIR...")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Write augmentation-images.{md,csv} and augmentation-instances.{md,csv} here.")
def augmentation_counts_cmd(folders: tuple[str, ...], out_dir: str | None) -> None:
    """Generated and crawled images and HOI instances per split from augmentation output folders
    (B-RIGHT Tables S2/S3); SPLIT=DIR groups several folders (run and filter) under one split.
    Add the split's `split balanced --extra-train` folder (SPLIT=DIR) to count what its train set
    holds after the per-class cap; without it the counts are the augmentation's, before trimming."""
    from hoibench.analysis import augmentation_counts
    from hoibench.cli._paper_inputs import split_folders
    from hoibench.reports import augmentation_tables

    tables = augmentation_tables(augmentation_counts(split_folders(folders)))
    for t in tables:
        console.print(f"## {t.title}\n\n{t.to_markdown()}", markup=False)
    console.print(tables[0].caption, markup=False)
    _write(out_dir, tables, [])


@analyze.command("mcq-vs-map")
@click.argument("results", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--map-benchmark", default="hico-det", show_default=True, help="Benchmark of the mAP results.")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Write mcq-vs-map.{md,csv,png} here.")
def mcq_vs_map_cmd(results: tuple[str, ...], map_benchmark: str, out_dir: str | None) -> None:
    """Instance-F1 in setting 3 against HICO-DET mAP per model (multiple-choice paper Figure 1b)."""
    from hoibench._exceptions import ConfigError
    from hoibench.analysis import mcq_vs_map
    from hoibench.reports import mcq_vs_map_figure, mcq_vs_map_table
    from hoibench.results import read_results

    points = mcq_vs_map(read_results(list(results)), map_benchmark=map_benchmark)
    if not points:
        raise ConfigError(f"no model has both a setting-3 multiple-choice result and an mAP result on "
                          f"{map_benchmark} in {', '.join(results)}")
    table = mcq_vs_map_table(points)
    console.print(table.to_markdown(), markup=False)
    _write(out_dir, [table], [mcq_vs_map_figure(points)] if out_dir else [])


@analyze.command("qualitative")
@click.option("--images", "images_dir", required=True, type=click.Path(exists=True, file_okay=False),
              help="Folder of the images (also searched: train2015/, test2015/).")
@click.option("--questions", "questions_path", default=None, type=click.Path(exists=True, dir_okay=False))
@click.option("--answers", "answers_paths", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Answers JSONL of one model to --questions (repeat per model).")
@click.option("--name", "names", multiple=True, help="Model names in --answers order.")
@click.option("--sample", "n_sample", type=click.IntRange(min=1), default=6, show_default=True,
              help="Questions drawn for the pages.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the sample of questions.")
@click.option("--detections", "detections", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Detections of one model (any format eval hico reads); repeat per model.")
@click.option("--detection-class", "hoi_class", default=None, metavar="HOI",
              help="HOI class of the detection pages: index or 'verb object' [default: the class of "
                   "the top-scored detection].")
@click.option("--top", "top_k", type=click.IntRange(min=1), default=6, show_default=True,
              help="Detections drawn per file.")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Write report.html (self-contained), figures/ and tables/ here.")
def qualitative(images_dir: str, questions_path: str | None, answers_paths: tuple[str, ...],
                names: tuple[str, ...], n_sample: int, seed: int, detections: tuple[str, ...],
                hoi_class: str | None, top_k: int, out_dir: str) -> None:
    """Qualitative pages: sampled questions drawn with the target box, the choices, the correct
    set and each model's answer (Figures 4-6); top-scored detections of a class on their images."""
    from hoibench._exceptions import ConfigError
    from hoibench.cli._common import reject_unused_options
    from hoibench.cli._paper_inputs import detection_pages, model_answers
    from hoibench.reports import Report, mcq_qualitative_section

    if bool(questions_path) != bool(answers_paths):
        raise ConfigError("--questions and --answers go together")
    if not questions_path and not detections:
        raise ConfigError("give --questions with --answers, or --detections")
    if not questions_path:
        reject_unused_options(click.get_current_context(), "without --questions", "names", "n_sample", "seed")
    if not detections:
        reject_unused_options(click.get_current_context(), "without --detections", "hoi_class", "top_k")
    rep = Report(title="hoibench qualitative pages", meta={"images": images_dir, "seed": seed})
    if questions_path:
        qs, by_model = model_answers(questions_path, answers_paths, names)
        rep.sections.append(mcq_qualitative_section(qs, by_model, images_dir, n=n_sample, seed=seed))
    for path in detections:
        rep.sections.append(detection_pages(path, images_dir, hoi_class, top_k=top_k))
    files = rep.write(out_dir)
    console.print(f"{len(rep.figures)} pages in {files.html}")


@analyze.command("head-to-tail")
@click.option("--questions", "questions_path", required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--answers", "answers_path", required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--train-questions", "train_path", required=True, type=click.Path(exists=True, dir_okay=False),
              help="Training questions (hoibench mcq build --split train): class frequency = questions "
                   "with the class among their correct choices.")
@click.option("--bins", type=click.IntRange(min=1), default=10, show_default=True, help="Frequency bins, head to tail.")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Write head-to-tail-train-questions.{md,csv,png} here.")
def head_to_tail(questions_path: str, answers_path: str, train_path: str, bins: int, out_dir: str | None) -> None:
    """Recall of the correct choices binned by class frequency in a training-question set (the
    multiple-choice paper's Figure 3 for a model fine-tuned on those questions)."""
    from hoibench._exceptions import ConfigError
    from hoibench.analysis import head_to_tail_recall, question_class_counts
    from hoibench.formats import read_answers, read_questions
    from hoibench.reports import Table, head_to_tail_figure
    from hoibench.vocab import hico_det

    qs = list(read_questions(questions_path))
    train = list(read_questions(train_path))
    if any(q.label_space != "hico-det" for q in (*qs, *train)):
        raise ConfigError("head-to-tail by training questions needs HICO-DET questions (label_space hico-det)")
    counts = question_class_counts(train, hico_det().n_hois)
    answers = read_answers(answers_path, qs)
    perms = answers.permutations()
    h2t = head_to_tail_recall(qs, answers.for_permutation(perms[0]) if perms else {}, counts, n_bins=bins)
    table = Table.from_records("head-to-tail-train-questions", "Recall by class frequency in the training questions",
                               [{"bin": b.index + 1, "train_questions_max": b.max_count, "train_questions_min": b.min_count,
                                 "classes": b.n_classes, "gt_answers": b.n_gt,
                                 "recall": None if b.recall is None else 100 * b.recall} for b in h2t.bins],
                               caption=f"Classes that are a correct choice of {questions_path}, ordered by how many "
                                       f"training questions of {train_path} have them among their correct choices "
                                       "(ties by class index) and cut into equal bins; recall in percent.")
    console.print(table.to_markdown(), markup=False)
    figures = [head_to_tail_figure(h2t, name="head-to-tail-train-questions",
                                   title="Recall by frequency in the training questions")] if out_dir else []
    _write(out_dir, [table], figures)


# B-RIGHT supplementary Figures S2 and S3 (their own module: they load image models)
analyze.add_command(embeddings_cmd)
analyze.add_command(prompt_ablation_cmd)
