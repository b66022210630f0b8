"""End to end on the CPU: a tiny random SDXL built from configs, a detector fake behind the
interface and scripted VLM/LLM answers fill the deficits of two classes of a balanced split,
through paraphrase-and-regenerate, the attempt limit and a resume after a crash; the merged
result passes the balanced-split checks (exactly L instances per class)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("diffusers")
pytest.importorskip("torch")

from hoibench.augment import (
    AugmentConfig,
    DiffusersGenerator,
    GeneratorConfig,
    augment_deficits,
    read_deficits,
    read_manifests,
)
from hoibench.benchmarks.balanced import build_balanced_split
from hoibench.formats import read_hicodet, read_ppdm
from tests.test_augment_helpers import (
    EAT_APPLE,
    HOLD_CUP,
    RIDE_HORSE,
    VOCAB,
    CountingGenerator,
    Interrupted,
    Script,
    pipeline,
    real_dataset,
)

L_TRAIN, L_TEST = 4, 1


@pytest.fixture(scope="module")
def tiny_generator() -> DiffusersGenerator:
    from hoibench.augment import build_generator

    gen = build_generator(GeneratorConfig(kind="tiny", steps=1, width=32, height=32))
    assert isinstance(gen, DiffusersGenerator)
    return gen


def _setup(tmp: Path):
    real = real_dataset(tmp / "real", {EAT_APPLE: 10, RIDE_HORSE: 4, HOLD_CUP: 3})
    split = build_balanced_split(real, top_k=3, l_train=L_TRAIN, l_test=L_TEST, random_state=0)
    deficits = tmp / "deficits.json"
    deficits.write_text(json.dumps(split.deficits_json()))
    return real, split, read_deficits(deficits, VOCAB)


def test_tiny_sdxl_is_seeded(tiny_generator: DiffusersGenerator) -> None:
    a = np.asarray(tiny_generator.generate("a person riding a horse", seed=3))
    b = np.asarray(tiny_generator.generate("a person riding a horse", seed=3))
    c = np.asarray(tiny_generator.generate("a person riding a horse", seed=4))
    assert a.shape == (32, 32, 3)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_fills_two_classes_with_paraphrase_limit_and_resume(tmp_path: Path,
                                                            tiny_generator: DiffusersGenerator) -> None:
    real, split, targets = _setup(tmp_path)
    need = {t.hoi: t.need for t in targets}
    assert set(need) == {RIDE_HORSE, HOLD_CUP} and all(n > 0 for n in need.values())
    # ride horse: the first three images fail verification → three paraphrases before a keep;
    # hold cup: its second image fails
    script = Script(reject={(RIDE_HORSE, 0), (RIDE_HORSE, 1), (RIDE_HORSE, 2), (HOLD_CUP, 1)})
    cfg = AugmentConfig(seed=7)
    out = tmp_path / "out"
    kwargs = {"vocab": VOCAB, "out_dir": out, "dataset": real, "images_dir": tmp_path / "real"}

    # 1) attempt limit: with 2 attempts ride-horse cannot be filled and stops
    gen1 = CountingGenerator(tiny_generator)
    res1 = augment_deficits(targets, pipeline=pipeline(gen1, script, cfg), max_attempts=2, **kwargs)
    rows = {r["hoi"]: r for r in res1.classes}
    assert rows[RIDE_HORSE]["attempts"] == 2 and rows[RIDE_HORSE]["filled"] == 0
    assert rows[RIDE_HORSE]["status"] == "unfilled"
    assert rows[HOLD_CUP]["attempts"] == 2 and rows[HOLD_CUP]["kept_images"] == 1
    assert len(gen1.calls) == 4
    recs = [r for r in read_manifests(out) if r["event"] == "attempt" and r["hoi"] == RIDE_HORSE]
    assert [r["status"] for r in recs] == ["rejected", "rejected"]
    # paraphrase-and-regenerate: each rejected prompt is reworded for the next attempt
    assert recs[1]["prompt"] == recs[0]["next_prompt"] == recs[0]["prompt"] + " (reworded)"

    # 2) a crash in the middle of the continued run (the second new image fails)
    gen2 = CountingGenerator(tiny_generator, fail_after=1)
    with pytest.raises(Interrupted):
        augment_deficits(targets, pipeline=pipeline(gen2, script, cfg), max_attempts=6, **kwargs)

    # 3) resume: finishes, never regenerating an image made before
    gen3 = CountingGenerator(tiny_generator)
    res3 = augment_deficits(targets, pipeline=pipeline(gen3, script, cfg), max_attempts=6, **kwargs)
    before = set(gen1.calls) | set(gen2.calls)
    assert not before & set(gen3.calls)
    assert res3.unfilled == []
    rows = {r["hoi"]: r for r in res3.classes}
    assert rows[RIDE_HORSE]["attempts"] == 4 and rows[RIDE_HORSE]["kept_images"] == 1
    assert all(rows[h]["filled"] >= need[h] for h in need)

    # the same run without interruptions gives the same images and annotations
    ref_gen = CountingGenerator(tiny_generator)
    ref_out = tmp_path / "ref"
    ref = augment_deficits(targets, pipeline=pipeline(ref_gen, script, cfg), max_attempts=6,
                           **{**kwargs, "out_dir": ref_out})
    assert ref.dataset.equals(res3.dataset)
    assert len(ref_gen.calls) == len(before | set(gen3.calls))
    for name in ref.dataset.file_names:
        assert (ref_out / "images" / name).read_bytes() == (out / "images" / name).read_bytes()

    # outputs in our formats read back to the same dataset
    assert read_ppdm(out / "annotations" / "trainval_augment.json").equals(res3.dataset)
    hico = read_hicodet(out / "annotations" / "instances_augment.json")  # boxes per pair there
    assert hico.file_names == res3.dataset.file_names
    assert np.array_equal(hico.pair_hoi, res3.dataset.pair_hoi)
    assert np.allclose(hico.pair_subject_boxes, res3.dataset.pair_subject_boxes)
    assert np.allclose(hico.pair_object_boxes, res3.dataset.pair_object_boxes)

    # 4) merge: the balanced-split builder takes the generated images as extra train data
    merged = build_balanced_split(real, top_k=3, l_train=L_TRAIN, l_test=L_TEST, random_state=0,
                                  extra_train=res3.dataset)
    assert merged.deficits() == []
    assert merged.train.counts.tolist() == [L_TRAIN] * 3
    train = merged.train.dataset
    counts = np.bincount(train.pair_hoi, minlength=VOCAB.n_hois)
    assert all(counts[h] == L_TRAIN for h in split.classes)
    assert merged.train.extra_images > 0
    assert merged.test.counts.tolist() == [L_TEST] * 3
    assert not any(n.startswith("aug_") for n in merged.test.dataset.file_names)


def test_owlv2_detector_on_a_tiny_checkpoint(tmp_path: Path) -> None:
    """The transformers detector code path (processor, model, OWLv2's square-padding
    post-processing, per-query limit, clipping) on a tiny random checkpoint saved locally."""
    from PIL import Image

    from hoibench.augment import DetectorConfig, build_detector
    from hoibench.testing import save_tiny_owlv2

    folder = save_tiny_owlv2(tmp_path / "owl")
    det = build_detector(DetectorConfig(kind="owlv2", model=str(folder), box_threshold=0.0,
                                        max_per_label=3, device="cpu"))
    dets = det.detect(Image.new("RGB", (48, 40), (90, 20, 20)), ["person", "horse"])
    assert 0 < len(dets) <= 6
    for q in (0, 1):
        mine = [d for d in dets if d.query == q]
        assert len(mine) <= 3 and [d.score for d in mine] == sorted((d.score for d in mine), reverse=True)
    for d in dets:
        x1, y1, x2, y2 = d.box
        assert 0 <= x1 <= x2 <= 48 and 0 <= y1 <= y2 <= 40 and 0 < d.score < 1
    assert det.fingerprint()["kind"] == "owlv2"
