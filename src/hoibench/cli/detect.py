"""``hoibench detect``: external detectors whose output other commands read (``detect people``
makes the ``--detections`` file of ``mcq run --setting 3``). Thin: parse, call
:func:`hoibench.runners.detect_people`, render."""

from __future__ import annotations

import click

from hoibench.cli._common import console, emit_json, json_option

__all__ = ["detect"]


@click.group()
def detect() -> None:
    """Run object detectors over image folders."""


@detect.command()
@click.option("--images", required=True, type=click.Path(exists=True, file_okay=False),
              help="Folder of images (searched recursively; names relative to it).")
@click.option("--model", required=True,
              help="transformers object detector: hub id or local folder (e.g. facebook/detr-resnet-50).")
@click.option("--out", required=True, type=click.Path(dir_okay=False),
              help="Detections JSON for 'mcq run --detections'; OUT.records.jsonl beside it is "
                   "resumed if present.")
@click.option("--questions", "questions_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Only the images these questions need (question JSONL or a released JSON file).")
@click.option("--label", "labels", multiple=True, default=("person",), show_default=True,
              help="Class name(s) of the model to keep.")
@click.option("--threshold", type=click.FloatRange(0, 1), default=0.5, show_default=True,
              help="Score below which a box is dropped by the detector's post-processing "
                   "(mcq run filters again at 0.5 after NMS).")
@click.option("--batch-size", type=click.IntRange(min=1), default=8, show_default=True,
              help="Images per forward pass.")
@click.option("--device", default="auto", show_default=True, help="'auto', 'cpu', 'cuda', 'cuda:1', ...")
@click.option("--follow-symlinks", is_flag=True, help="Follow symlinks under --images that lead out of it.")
@click.option("--limit", type=click.IntRange(min=0), default=None, help="Only the first N images.")
@click.option("--overwrite", is_flag=True, help="Start over instead of resuming OUT.records.jsonl.")
@click.option("--no-progress", is_flag=True)
@json_option("The summary")
def people(images: str, model: str, out: str, questions_path: str | None, labels: tuple[str, ...],
           threshold: float, batch_size: int, device: str, follow_symlinks: bool, limit: int | None,
           overwrite: bool, no_progress: bool, as_json: str | None) -> None:
    """Detect people in every image (setting 3's external detector); resumable."""
    from hoibench.models import ObjectDetector
    from hoibench.runners import detect_people, list_images

    if questions_path is not None:
        from hoibench.formats import read_questions

        names = list(dict.fromkeys(q.file_name for q in read_questions(questions_path)))
    else:
        names = list_images(images)
    if limit is not None:
        names = names[:limit]
    detector = ObjectDetector.from_pretrained(model, threshold=threshold, device=device,
                                              progress=not no_progress)
    summary = detect_people(detector, images, out, names=names, labels=labels, batch_size=batch_size,
                            follow_symlinks=follow_symlinks, overwrite=overwrite,
                            progress=not no_progress)
    if not emit_json(summary.as_dict(), as_json):
        console.print(f"{summary.ok} of {summary.total} images detected ({summary.resumed} kept from an "
                      f"earlier run, {summary.errors} failed), {summary.people} boxes of "
                      f"{', '.join(labels)}, {summary.seconds:.1f} s")
        console.print(f"wrote {summary.out} (records: {summary.records})")
    if summary.errors:
        raise click.ClickException(f"{summary.errors} image(s) failed and are not in {summary.out} "
                                   f"(their errors are in {summary.records}); run again to retry them")
