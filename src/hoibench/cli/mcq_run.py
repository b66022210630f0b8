"""``hoibench mcq run`` (VLMs on the multiple-choice benchmark) and ``hoibench mcq analyze``
(the paper's error analyses). Thin: parse arguments, call :mod:`hoibench.runners`, render."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from hoibench.cli._common import console, emit_json, err_console, json_option
from hoibench.cli.mcq_bench import count_unanswered_option
from hoibench.models._openai import ROUTINGS
from hoibench.runners.mcq._run import IMAGE_WORKERS

__all__ = ["analyze", "run"]


def _file_id(path: str) -> str:
    from hoibench._io import file_id

    return file_id(path)


@click.command()
@click.option("--questions", "questions_path", required=True, type=click.Path(exists=True, dir_okay=False),
              help="Question JSONL (hoibench mcq build) or a released CrossHOI-Bench JSON file.")
@click.option("--images", required=True, type=click.Path(exists=True, file_okay=False),
              help="Folder that the questions' file names are relative to; a name that leaves it "
                   "is refused before any request.")
@click.option("--follow-symlinks", is_flag=True,
              help="Follow symlinks under --images that lead out of it (a link farm on purpose); "
                   "names with '..' above it or absolute names stay refused.")
@click.option("--model", required=True, help="Model name (server name, HF id or local path).")
@click.option("--backend", type=click.Choice(["openai", "vllm", "transformers"]), default="openai",
              show_default=True)
@click.option("--base-url", "base_urls", multiple=True, default=("http://127.0.0.1:8000/v1",),
              show_default=True, help="OpenAI-compatible server (one data-parallel server or router is "
                                      "simplest); repeat for several: each request goes to the one "
                                      "with the fewest outstanding, failing servers are skipped.")
@click.option("--concurrency", type=int, default=16, show_default=True, help="Requests in flight (openai).")
@click.option("--routing", type=click.Choice(ROUTINGS), default=ROUTINGS[0], show_default=True,
              help="Several --base-urls (openai): each request to the server with the fewest outstanding, "
                   "or image-affinity: every request with the same image to the same server (its prefix "
                   "cache serves the K orders of --permutations), the next healthy one when it fails.")
@click.option("--batch-size", type=int, default=32, show_default=True, help="Batch size (vllm, transformers).")
@click.option("--image-workers", type=click.Choice(IMAGE_WORKERS), default="auto", show_default=True,
              help="Where resized images are prepared: threads (auto on up to 4 CPUs: less CPU per image) "
                   "or worker processes (auto above). The bytes sent are the same either way.")
@click.option("--frame-cache", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Keep the resized frames (qwen2.5/qwen3 conventions) in DIR by image content and frame "
                   "settings, so later runs (other models of the family, prompts, seeds, shards) do not "
                   "prepare them again; the bytes sent are the same.")
@click.option("--engine-kwargs", default=None, metavar="JSON",
              help="Offline engine options: vllm.LLM keywords for --backend vllm (e.g. "
                   "'{\"tensor_parallel_size\": 2, \"max_model_len\": 8192, \"limit_mm_per_prompt\": "
                   "{\"image\": 1}, \"gpu_memory_utilization\": 0.9}'), from_pretrained keywords for "
                   "--backend transformers. Part of the cache key.")
@click.option("--min-pixels", type=click.IntRange(min=1), default=None,
              help="Qwen2.5 frame: fewest pixels of the image sent (default the processor's 3136); "
                   "also set on the transformers processor.")
@click.option("--max-pixels", type=click.IntRange(min=1), default=None,
              help="Qwen2.5 frame: most pixels of the image sent (default the processor's 12845056); "
                   "also set on the transformers processor.")
@click.option("--shard", default=None, metavar="I/N",
              help="Only shard I of N of the questions (by image; runs on N machines), each with its "
                   "own --out and cache; join them with `hoibench mcq merge`.")
@click.option("--extra-body", default=None, metavar="JSON",
              help="Extra JSON fields for every request (openai), e.g. '{\"top_k\": 1}'.")
@click.option("--setting", type=click.Choice(["1", "2", "3"]), default=None,
              help="Only questions of this setting; 3 asks the setting-2 questions with detection "
                   "first [default: every question in its own setting].")
@click.option("--box-convention", default="auto", show_default=True,
              type=click.Choice(["auto", "qwen2.5", "qwen3", "internvl", "relative-1000", "original"]))
@click.option("--detections", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Setting 3: person boxes from an external detector (JSON) instead of the model's.")
@click.option("--limit", type=int, default=None, help="Only the first N questions.")
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="Answers JSONL (resumed if present).")
@click.option("--cache", type=click.Path(dir_okay=False), default=None,
              help="SQLite response cache [default: OUT.cache.sqlite].")
@click.option("--template", default="crosshoi", show_default=True, help="Bundled template name or YAML file.")
@click.option("--answer-format", default="letters", show_default=True,
              type=click.Choice(["letters", "answer_tag", "reasoning_first", "answer_first"]))
@click.option("--seed", type=int, default=0, show_default=True, help="Choice-order seed.")
@click.option("--permutation", type=click.IntRange(min=0), default=0, show_default=True,
              help="Choice order (question.order(seed, permutation)).")
@click.option("--permutations", "n_orders", type=click.IntRange(min=1), default=1, show_default=True,
              help="Ask K choice orders (--permutation .. +K-1), one answers file each "
                   "(OUT with .orderK before the suffix), to measure position sensitivity.")
@click.option("--max-tokens", type=int, default=512, show_default=True)
@click.option("--temperature", type=float, default=0.0, show_default=True)
@click.option("--max-retries", type=click.IntRange(min=0), default=5, show_default=True,
              help="Retries of a question after a 429, 408/409, 5xx, timeout or connection error "
                   "(openai); then it is recorded as failed and the others go on.")
@click.option("--timeout", type=float, default=600.0, show_default=True,
              help="Seconds one attempt may take in all, connect to last byte (openai); then it is "
                   "retried, on another server when there is one.")
@click.option("--backoff", type=click.FloatRange(min=0), default=1.0, show_default=True,
              help="Seconds before a question's first retry, doubling per retry (jittered, openai); "
                   "also how long a server's opened circuit gets no requests.")
@click.option("--max-backoff", type=click.FloatRange(min=0), default=60.0, show_default=True,
              help="The longest backoff and circuit-open period (openai); with every server down, the "
                   "run stops when nothing has answered for this long.")
@click.option("--failure-threshold", type=click.IntRange(min=1), default=3, show_default=True,
              help="Distinct questions failing on a server with no success in between that open its "
                   "circuit (openai); one question failing again and again counts once.")
@click.option("--iou-threshold", type=float, default=0.5, show_default=True)
@click.option("--strict-iou", is_flag=True, help="IoU > threshold (released code) instead of >= (paper).")
@click.option("--strict-detection-parser", is_flag=True, help="Only fenced ```json blocks (released code).")
@click.option("--box-shift", type=float, default=0.0, show_default=True,
              help="Add to target boxes in prompts (1 reproduces the released prompts on HICO-DET).")
@click.option("--overwrite", is_flag=True,
              help="Start a new OUT instead of resuming it (cached responses are still reused; "
                   "delete the cache to ask the model again).")
@click.option("--no-progress", is_flag=True)
@json_option("Summary")
def run(questions_path: str, images: str, follow_symlinks: bool, model: str, backend: str, base_urls: tuple[str, ...],
        concurrency: int, routing: str, batch_size: int, image_workers: str, frame_cache: str | None,
        engine_kwargs: str | None, min_pixels: int | None,
        max_pixels: int | None, shard: str | None, extra_body: str | None, setting: str | None, box_convention: str,
        detections: str | None, limit: int | None, out: str, cache: str | None, template: str,
        answer_format: str, seed: int, permutation: int, n_orders: int, max_tokens: int,
        temperature: float,
        max_retries: int, timeout: float, backoff: float, max_backoff: float, failure_threshold: int,
        iou_threshold: float, strict_iou: bool,
        strict_detection_parser: bool, box_shift: float, overwrite: bool, no_progress: bool,
        as_json: str | None) -> None:
    """Answer multiple-choice HOI questions with a VLM; resumable, every response cached.

    Exits 1 when any question failed (the first cause and the count on stderr; a re-run asks
    them again), 2 on bad input or when no server answers at all."""
    from hoibench._exceptions import ConfigError
    from hoibench.formats import read_questions
    from hoibench.models import CachedBackend, GenerationParams, ResponseCache, make_backend
    from hoibench.runners import MCQRunner
    from hoibench.runners.mcq import (
        QWEN_MAX_PIXELS,
        QWEN_MIN_PIXELS,
        FrameCache,
        load_detections,
        parse_shard,
        resolve_box_convention,
        select_questions,
    )

    if limit is not None and limit < 0:
        raise ConfigError(f"--limit must be >= 0; got {limit}")
    s = int(setting) if setting is not None else None
    if detections is not None and s not in (None, 3):
        raise ConfigError("--detections is only used with --setting 3")
    # the header records setting, shard and limit: `mcq score|analyze|compare` score these questions
    qlist = select_questions(read_questions(questions_path), setting=s)
    if s is not None and not qlist:
        want = (2, 3) if s == 3 else (s,)
        raise ConfigError(f"{questions_path}: no questions of setting {' or '.join(map(str, want))}")
    scope_header: dict[str, Any] = {}
    if shard is not None:
        index, count = parse_shard(shard)
        scope_header = {"shard": f"{index}/{count}"}
        qlist = select_questions(qlist, shard=scope_header["shard"])
    if limit is not None:
        qlist = qlist[:limit]
        scope_header["limit"] = limit
    if template == "crosshoi" and any(q.label_space == "swig-hoi" for q in qlist):
        err_console.print("note: SWiG-HOI questions ask about human-human interactions; the released "
                          "code words them differently: --template crosshoi-swig")
    extra = _json_object("--extra-body", extra_body)
    if extra is not None and backend != "openai":
        raise ConfigError("--extra-body is only used with --backend openai")
    engine = _json_object("--engine-kwargs", engine_kwargs)
    if engine is not None and backend == "openai":
        raise ConfigError("--engine-kwargs is only used with --backend vllm or transformers")
    px_min = QWEN_MIN_PIXELS if min_pixels is None else min_pixels
    px_max = QWEN_MAX_PIXELS if max_pixels is None else max_pixels
    if px_min > px_max:
        raise ConfigError(f"--min-pixels ({px_min}) must not exceed --max-pixels ({px_max})")
    if backend == "openai":
        inner = make_backend("openai", model=model, base_urls=base_urls, concurrency=concurrency,
                             max_retries=max_retries, timeout=timeout, extra_body=extra, routing=routing,
                             backoff=backoff, max_backoff=max_backoff, failure_threshold=failure_threshold)
    elif backend == "vllm":
        inner = make_backend("vllm", model=model, batch_size=batch_size, engine_kwargs=engine)
    else:
        # the processor resizes as the box frame assumes (Qwen2.5: smart_resize within the bounds)
        pixels = ({"min_pixels": px_min, "max_pixels": px_max}
                  if resolve_box_convention(box_convention, model) == "qwen2.5"
                  and (min_pixels is not None or max_pixels is not None) else None)
        inner = make_backend("transformers", model=model, batch_size=batch_size, model_kwargs=engine,
                             processor_kwargs=pixels)
    cache_path = cache if cache is not None else str(out) + ".cache.sqlite"
    cached = CachedBackend(inner, ResponseCache(cache_path, exclusive=True))
    frames = FrameCache(store=frame_cache)
    dets = load_detections(detections) if detections else None
    orders = list(range(permutation, permutation + n_orders))
    outs = [out] if n_orders == 1 else [_order_path(out, k) for k in orders]
    summaries = []
    try:
        for k, order_out in zip(orders, outs):
            runner = MCQRunner(
                cached, images=images, follow_symlinks=follow_symlinks, model=model, setting=s, box_convention=box_convention,
                template=template, answer_format=answer_format, seed=seed, permutation=k,
                params=GenerationParams(max_tokens=max_tokens, temperature=temperature, seed=seed),
                detections=dets, detections_id=_file_id(detections) if detections else None,
                iou_threshold=iou_threshold, strict_iou=strict_iou,
                strict_detection_parser=strict_detection_parser, box_shift=box_shift,
                min_pixels=px_min, max_pixels=px_max, progress=not no_progress, frames=frames,
                image_workers=image_workers,
                extra_header={"questions": _file_id(questions_path), **scope_header})
            summaries.append(runner.run(qlist, order_out, overwrite=overwrite, questions_file=questions_path))
    finally:
        cached.cache.close()
    report = summaries[0].as_dict() if n_orders == 1 else {"orders": [x.as_dict() for x in summaries]}
    store = frames.store
    if store is not None:
        report["frame_cache"] = {"folder": str(store.root), "reused": store.hits, "written": store.writes,
                                 "rejected": store.rejected}
    if not emit_json(report, as_json):
        for summary in summaries:
            _print_summary(summary, model, backend)
        if store is not None:
            console.print(f"frame cache {store.root}: {store.hits} frame(s) reused, {store.writes} written"
                          + (f", {store.rejected} damaged file(s) prepared again" if store.rejected else ""))
        if n_orders > 1:
            answers = " ".join(f"--answers {o}" for o in outs)
            console.print(f"position sensitivity: hoibench mcq score --questions {questions_path} {answers}")
    failed = [x for x in summaries if x.error]
    if failed:
        n = sum(x.error for x in failed)
        total = sum(x.total for x in summaries)
        first = next(x.first_error for x in failed if x.first_error)
        err_console.print(f"error: {n} of {total} questions failed (first: {first}){_rerun_hint(failed)}",
                          soft_wrap=True, highlight=False, markup=False)
        raise SystemExit(1)


def _rerun_hint(failed: list[Any]) -> str:
    """Suggest a rerun only for failures it may fix (timeouts, 5xx, connection errors), not for
    refusals it would only send again (a 4xx such as 400/401/404/413, a malformed reply)."""
    n = sum(x.error for x in failed)
    k = sum(x.retryable_errors for x in failed)
    if k == 0:
        return "; the server refused the requests: a rerun would send them again the same way"
    if k == n:
        return "; run the same command again to ask them again"
    return f"; run the same command again to ask the {k} that a rerun may answer again"


def _json_object(option: str, text: str | None) -> dict[str, Any] | None:
    """A JSON object given on the command line, or one line naming the option."""
    if text is None:
        return None
    import json

    from hoibench._exceptions import ConfigError

    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{option} must be a JSON object; got {text!r} ({exc})") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{option} must be a JSON object; got {text!r}")
    return value


def _order_path(out: str, k: int) -> str:
    """``answers.jsonl`` → ``answers.order2.jsonl`` (one file per choice order)."""
    p = Path(out)
    return str(p.with_name(f"{p.stem}.order{k}{p.suffix}"))


def _print_summary(summary: Any, model: str, backend: str) -> None:
    from rich.table import Table

    table = Table(title=f"hoibench mcq run: {model} ({backend})", show_header=False)
    for key, label in (("total", "questions"), ("resumed", "kept from an earlier run"),
                       ("ok", "answered"), ("parse_error", "parse failures"),
                       ("no_person_match", "no person matched (setting 3)"), ("error", "errors"),
                       ("requests", "requests (one per question and stage)"),
                       ("attempts", "attempts sent (retries included)"), ("retries", "retries"),
                       ("sends", "requests written (re-sends on a fresh connection included)"),
                       ("cache_hits", "cache hits")):
        value = getattr(summary, key)
        if value is not None:
            table.add_row(label, str(value))
    for srv in summary.servers:
        table.add_row(f"server {srv['url']}", f"{srv['attempts']} attempts, {srv['failures']} failed, "
                      f"{srv['wait_seconds']:.1f} s waited")
    table.add_row("seconds", f"{summary.seconds:.1f}")
    table.add_row("answers", summary.out)
    console.print(table)


@click.command()
@click.option("--questions", "questions_path", required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--answers", "answers_path", required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--dataset", default="hico-det:test", show_default=True,
              help="Annotations of the questions' images (for the other people's interactions).")
@click.option("--train-counts", default="official", show_default=True,
              help="Class frequency for head-to-tail: 'official' HICO-DET train counts or a dataset.")
@click.option("--bins", type=int, default=10, show_default=True, help="Frequency bins, head to tail.")
@click.option("--iou-threshold", type=float, default=0.5, show_default=True,
              help="Overlap above which an annotated person is the target itself.")
@click.option("--setting", type=click.IntRange(1, 3), default=None,
              help="Analyse only questions of this setting (3: the setting-2 questions) [default: the "
                   "setting the answers file records it was asked, else every setting].")
@count_unanswered_option
@click.option("--out-dir", type=click.Path(file_okay=False), default=None, help="Write JSON, CSV and plots here.")
@json_option("The error analysis")
def analyze(questions_path: str, answers_path: str, dataset: str, train_counts: str, bins: int,
            iou_threshold: float, setting: int | None, count_unanswered: bool, out_dir: str | None,
            as_json: str | None) -> None:
    """Error analysis: Finding 1 (false positives that are other people's interactions) and
    head-to-tail recall by class frequency (Figure 3), on the questions the answers were asked."""
    from hoibench.analysis import head_to_tail_recall, misattribution_share, train_class_counts
    from hoibench.cli.mcq_bench import scored_answers
    from hoibench.datasets import resolve_dataset
    from hoibench.reports import head_to_tail_figure

    answers, scope = scored_answers(questions_path, (answers_path,), setting, "auto", count_unanswered)
    qs = list(scope.questions)
    ds = resolve_dataset(dataset)
    mis = misattribution_share(qs, answers, ds, iou_threshold=iou_threshold)
    counts = train_class_counts(train_counts)
    h2t = head_to_tail_recall(qs, answers, counts, n_bins=bins)
    result = {"kind": "mcq_error_analysis", "answers": str(answers_path), "model": scope.model,
              "questions": str(questions_path), "n_questions": len(qs), **scope.provenance(),
              "misattribution": mis.as_dict(), "head_to_tail": h2t.as_dict()}
    if out_dir is not None:
        from hoibench._io import atomic_write_bytes, atomic_write_json

        d = Path(out_dir)
        d.mkdir(parents=True, exist_ok=True)
        atomic_write_json(d / "mcq_error_analysis.json", result, indent=True)
        h2t.write_csv(d / "head_to_tail_recall.csv")
        atomic_write_bytes(d / "head_to_tail_recall.png", head_to_tail_figure(h2t).png)
    if emit_json(result, as_json):
        return
    from rich.table import Table

    console.print(f"{len(qs)} questions, {scope.label}")
    console.print(f"Finding 1: {mis.misattributed} of {mis.false_positives} false positives "
                  f"({100 * mis.share:.1f}%) are interactions of other people in the image "
                  f"({mis.questions_with_others} questions with other annotated people).")
    table = Table(title="Recall by class frequency (head → tail)")
    for col in ("bin", "train count range", "classes", "gt answers", "recall %"):
        table.add_column(col, justify="right")
    for b in h2t.bins:
        table.add_row(str(b.index), f"{b.min_count}–{b.max_count}", str(b.n_classes), str(b.n_gt),
                      "–" if b.recall is None else f"{100 * b.recall:.1f}")
    console.print(table)
    if out_dir is not None:
        console.print(f"wrote {Path(out_dir) / 'mcq_error_analysis.json'}, head_to_tail_recall.csv/.png")
