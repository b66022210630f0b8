"""CDN vs GEN-VLKT ``results.json``: the format is chosen on weighed evidence, said in one line,
and refused with the numbers when no reading clearly fits; ``--format`` always wins.

The files are built here from noisy detections on a subset of the bundled HICO-DET test set, one
query per detection (``category_id`` the verb, as CDN writes it), in three variants: as CDN
writes it (invalid (verb, object) pairs zeroed), without that zeroing (an export of one's own),
and with the box labels in HICO-DET's object order instead of COCO-80's.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

from hoibench._exceptions import FormatError
from hoibench.cli import cli
from hoibench.data import HOIPredictions
from hoibench.datasets import load_dataset
from hoibench.formats import load_predictions, write_hicodet
from hoibench.testing import noisy_predictions
from tests.conftest import one_line_error


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    gt = load_dataset("hico-det:test")
    gt = gt.subset(np.arange(0, gt.n_images, 60))
    d = tmp_path_factory.mktemp("evidence")
    write_hicodet(gt, d / "gt.json")
    return gt, noisy_predictions(gt, seed=7, per_image=(60, 80)), d


def results_json(p: HOIPredictions, *, labels: str = "coco80", zero_invalid: bool = True, top: int = 100) -> str:
    """``json.dumps(str({'preds', 'gts'}))`` with one query per detection: boxes (subjects then
    objects) with labels (0 for the subjects; ``labels`` "coco80" as CDN, or "objects": the label
    space's own object indices), and per detection ``category_id`` = its verb; scores of (verb,
    object) pairs that are no HOI class zeroed as CDN does (``zero_invalid``); the top ``top``."""
    v = p.vocab
    preds = []
    for i, fn in enumerate(p.file_names):
        s = p.image_slice(i)
        n = s.stop - s.start
        obj_labels = v.coco80[p.objects[s]] if labels == "coco80" else p.objects[s]
        box_labels = np.concatenate([np.zeros(n, np.int64), obj_labels]).astype(np.int64)
        boxes = np.concatenate([p.boxes_h[s], p.boxes_o[s]]).astype(np.float32)
        scores = p.scores[s].astype(np.float32)
        if zero_invalid:
            scores = scores * (v.hoi_index(p.verbs[s], p.objects[s]) >= 0)
        order = np.argsort(-scores, kind="stable")[:top]
        preds.append({"filename": fn,
                      "predictions": [{"bbox": b, "category_id": c} for b, c in zip(boxes, box_labels)],
                      "hoi_prediction": [{"subject_id": np.int64(k), "object_id": np.int64(n + k),
                                          "category_id": np.int64(p.verbs[s][k]), "score": scores[k]}
                                         for k in order]})
    return json.dumps(str({"preds": preds, "gts": []}))


def evaluate(case, pred, *extra):
    _, _, d = case
    r = CliRunner().invoke(cli, ["eval", "hico", "--gt", str(d / "gt.json"), "--pred", str(pred),
                                 "--protocol", "qpic", *extra, "--json", "-"])
    return r


def full_map(r) -> float:
    assert r.exit_code == 0, r.output
    out = r.stdout
    return json.loads(out[out.index("{"):out.rindex("}") + 1])["full"]


def test_cdn_file_with_unzeroed_invalid_triplets_is_read_as_cdn_on_its_evidence(case, tmp_path):
    """An export that keeps scores on (verb, object) pairs that are no HOI class (0.2% of them
    here) was read as GEN-VLKT and scored near 0; the evidence says CDN, and the line says why."""
    _, p, _ = case
    path = tmp_path / "results.json"
    path.write_text(results_json(p, zero_invalid=False))
    loaded = load_predictions(path)
    assert loaded.format == "cdn"
    r = evaluate(case, path)
    line = next(ln for ln in r.stderr.splitlines() if ln.startswith("format: "))
    assert line.startswith("format: read as cdn: of ") and " scored triplets, " in line
    assert "form HOI classes as (verb, object box label) (cdn) vs " in line
    assert "have an HOI class naming the object box's label (gen-vlkt); --format overrides" in line
    verb_fit, hoi_fit = (float(x) for x in re.findall(r"([\d.]+)% ", line))
    assert verb_fit > 99 and hoi_fit < 10
    assert full_map(r) == pytest.approx(full_map(evaluate(case, path, "--format", "cdn")), abs=1e-12)
    assert full_map(r) > 0.3


def test_cdn_file_with_labels_in_another_index_space_is_refused_in_one_line(case, tmp_path, capsys):
    """Box labels in HICO-DET's object order (not CDN's COCO-80): read as GEN-VLKT it scored near
    0. Neither reading fits: one line naming both numbers, what the labels look like, and
    --format; exit non-zero, no traceback."""
    _, p, d = case
    path = tmp_path / "results.json"
    path.write_text(results_json(p, labels="objects"))
    err = one_line_error(["eval", "hico", "--gt", str(d / "gt.json"), "--pred", str(path)], capsys)
    assert "results.json: cannot tell cdn from gen-vlkt: of " in err
    assert "form HOI classes as (verb, object box label) (cdn)" in err
    assert "have an HOI class naming the object box's label (gen-vlkt)" in err
    assert "taken as hico-det object indices instead of COCO-80 indices" in err
    assert err.endswith("pass --format cdn or --format gen-vlkt")
    fits = [float(x) for x in re.findall(r"([\d.]+)% ", err)]
    assert len(fits) == 3 and fits[0] < 50 and fits[1] < 50 and fits[2] > 99


def ambiguous(tmp_path):
    """Triplets whose id is both a verb forming an HOI class with the box label and an HOI class
    naming that label: both readings fit every triplet."""
    v = load_dataset("hico-det:test").vocab
    both = [c for c in range(v.n_verbs) if v.hoi_index(c, v.hoi_verb_object[c, 1]) >= 0]
    assert len(both) >= 2
    hois, boxes = [], []
    for k, c in enumerate(both[:5]):
        boxes += [{"bbox": np.array([0, 0, 10, 10], np.float32), "category_id": 0},
                  {"bbox": np.array([5, 5, 20, 20], np.float32), "category_id": int(v.coco80[v.hoi_verb_object[c, 1]])}]
        hois.append({"subject_id": 2 * k, "object_id": 2 * k + 1, "category_id": c, "score": 0.9 - 0.1 * k})
    path = tmp_path / "results.json"
    path.write_text(json.dumps(str({"preds": [{"filename": "a.jpg", "predictions": boxes, "hoi_prediction": hois}],
                                    "gts": []})))
    return path, both[:5], v


def test_a_file_both_readings_fit_is_refused_naming_format(tmp_path):
    path, _, _ = ambiguous(tmp_path)
    with pytest.raises(FormatError, match=r"cannot tell cdn from gen-vlkt: of 5 scored triplets, 100\.0% form HOI "
                                          r"classes .* \(cdn\), 100\.0% have an HOI class .* \(gen-vlkt\); "
                                          r"pass --format cdn or --format gen-vlkt$"):
        load_predictions(path)


def test_an_explicit_format_always_wins(case, tmp_path):
    path, ids, v = ambiguous(tmp_path)
    as_cdn, as_hoi = load_predictions(path, format="cdn"), load_predictions(path, format="gen-vlkt")
    assert (as_cdn.format, as_hoi.format) == ("cdn", "gen-vlkt")
    assert as_cdn.detection is None and as_hoi.detection is None
    assert as_cdn.predictions.verbs.tolist() == ids
    assert as_hoi.predictions.verbs.tolist() == v.hoi_verb_object[ids, 0].tolist()
    # a file refused without --format is read as asked, with a warning when it fits the reading poorly
    _, p, _ = case
    wrong = tmp_path / "labels.json"
    wrong.write_text(results_json(p, labels="objects"))
    forced = load_predictions(wrong, format="cdn")
    assert forced.format == "cdn" and len(forced.warnings) == 1
    assert forced.warnings[0].startswith("labels.json: read as cdn as asked, but of ")
    assert "relabel the boxes" in forced.warnings[0]
    r = evaluate(case, wrong, "--format", "gen-vlkt")
    assert r.exit_code == 0 and "read as gen-vlkt as asked, but of " in r.stderr
    assert "format: " not in r.stderr  # nothing was detected


def test_fast_and_careful_readers_decide_alike(case, tmp_path, monkeypatch):
    """The C scanner and the careful literal parser give the same decision, line and refusal."""
    import hoibench.formats._scan as scan

    _, p, _ = case
    files = {}
    for name, kw in (("plain", {}), ("unzeroed", {"zero_invalid": False}), ("labels", {"labels": "objects"})):
        files[name] = tmp_path / f"{name}.json"
        files[name].write_text(results_json(p, **kw))

    def outcome(path):
        try:
            got = load_predictions(path)
            return got.format, got.detection, got.warnings
        except FormatError as exc:
            return str(exc)

    fast = {k: outcome(f) for k, f in files.items()}
    monkeypatch.setattr(scan, "_colscan", None)
    monkeypatch.setattr(scan, "AVAILABLE", False)
    assert {k: outcome(f) for k, f in files.items()} == fast
    assert fast["plain"][0] == fast["unzeroed"][0] == "cdn" and isinstance(fast["labels"], str)


def test_analyze_compare_takes_format_and_says_how_each_file_was_read(case, tmp_path):
    _, p, d = case
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(results_json(p, zero_invalid=False))
    b.write_text(results_json(p, labels="objects"))
    base = ["analyze", "compare", "--gt", str(d / "gt.json"), "--pred", str(a), "--pred", str(b),
            "--bootstrap", "5"]
    r = CliRunner().invoke(cli, base)
    assert r.exit_code != 0 and "cannot tell cdn from gen-vlkt" in str(r.exception)
    r = CliRunner().invoke(cli, [*base, "--format", "cdn"])
    assert r.exit_code == 0, r.output
    assert "b.json: read as cdn as asked, but of " in r.stderr
    r = CliRunner().invoke(cli, [*base, "--format", "cdn", "--format", "gen-vlkt"])
    assert r.exit_code == 0, r.output
    assert "format of a" not in r.stderr and "b.json: read as gen-vlkt as asked" in r.stderr  # given, not detected
    c = tmp_path / "c.json"
    c.write_text(a.read_text())
    r = CliRunner().invoke(cli, ["analyze", "compare", "--gt", str(d / "gt.json"), "--pred", str(a), "--pred", str(c),
                                 "--bootstrap", "5"])
    assert r.exit_code == 0, r.output
    assert "format of a: read as cdn: of " in r.stderr and "format of c: read as cdn: of " in r.stderr
    r = CliRunner().invoke(cli, [*base[:-2], "--pred", str(a), "--name", "x", "--name", "y", "--name", "z",
                                 "--format", "cdn", "--format", "cdn"])
    assert r.exit_code != 0 and "--format given 2 times for 3 --pred files" in str(r.exception)


# ----------------------------------------------------------------- PPDM/QPIC annotations: HICO-DET or V-COCO
def ppdm_file(tmp_path, pairs: list[tuple[int, int]], name: str = "anno.json"):
    """A PPDM/QPIC annotation list of one image per (verb id, COCO-91 object id), file names
    that name no dataset."""
    rows = [{"file_name": f"img_{k}.jpg", "annotations": [{"bbox": [0, 0, 10, 10], "category_id": 1},
                                                          {"bbox": [5, 5, 20, 20], "category_id": c}],
             "hoi_annotation": [{"subject_id": 0, "object_id": 1, "category_id": v}]} for k, (v, c) in enumerate(pairs)]
    path = tmp_path / name
    path.write_text(json.dumps(rows))
    return path


def test_ppdm_hico_file_with_low_verb_ids_is_read_as_hico_det(tmp_path):
    """HICO-DET annotations whose verb ids happen to stay below 29 were read as V-COCO (ids < 29);
    the classes they form say HICO-DET."""
    from hoibench.formats import read_dataset

    hico = load_dataset("hico-det:test").vocab
    vc = load_dataset("v-coco:test").vocab
    pairs = [(int(v) + 1, int(hico.object_to_coco91(o))) for v, o in hico.hoi_verb_object if v < 28
             and vc.hoi_index(int(v) + 1, int(vc.object_from_coco91(hico.object_to_coco91(o)))) < 0]
    assert len(pairs) >= 10
    assert read_dataset(ppdm_file(tmp_path, pairs)).vocab.name == "hico-det"


def test_ppdm_file_both_label_spaces_fit_is_refused_with_the_numbers(tmp_path, capsys):
    from hoibench.formats import read_dataset
    from hoibench.vocab import get_label_space

    hico = load_dataset("hico-det:test").vocab
    vc = load_dataset("v-coco:test").vocab
    pairs = [(int(v) + 1, int(hico.object_to_coco91(o))) for v, o in hico.hoi_verb_object if v < 28
             and vc.hoi_index(int(v) + 1, int(vc.object_from_coco91(hico.object_to_coco91(o)))) >= 0]
    assert len(pairs) >= 10
    path = ppdm_file(tmp_path, pairs)
    err = one_line_error(["data", "info", str(path)], capsys)
    assert f"cannot tell hico-det from v-coco: of {len(pairs)} HOI annotations with verb ids 1..{max(v for v, _ in pairs)}, 100.0% " in err
    assert "100.0% are V-COCO action-roles as 0-based ids (v-coco)" in err
    assert err.endswith("name the images HICO_*/COCO_*, or read it with read_dataset(..., "
                        "vocab=get_label_space('hico-det'|'v-coco'))")
    assert read_dataset(path, vocab=get_label_space("hico-det")).vocab.name == "hico-det"
    assert read_dataset(path, vocab=get_label_space("v-coco")).vocab.name == "v-coco"
