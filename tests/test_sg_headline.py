"""Classes without ground truth (an SG test set, a validation subset in a training loop): the
console leads with the benchmark's number, prints no value for an undefined subset, and warns
under official/pocket that Full/Rare/Non-rare count those classes as AP 0 — built data only."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from click.testing import CliRunner

from hoibench.analysis import hico_map_bootstrap
from hoibench.cli import cli
from hoibench.data import HOIDataset, HOIImage, HOIPredictions
from hoibench.datasets import hico_class_subsets
from hoibench.evaluation import ClassesWithoutGroundTruthWarning, HICOMeanAP, hico_mean_ap
from hoibench.formats import write_hicodet, write_predictions
from hoibench.vocab import hico_det

V = hico_det()
HORSE, BICYCLE = V.object_index("horse"), V.object_index("bicycle")
RIDE, FEED, REPAIR = V.verb_index("ride"), V.verb_index("feed"), V.verb_index("repair")
#: the split's unseen (test) combinations: the only classes with ground truth
UNSEEN = [(RIDE, HORSE), (FEED, HORSE), (REPAIR, BICYCLE)]
H, OB = [10.0, 10.0, 109.0, 209.0], [150.0, 50.0, 249.0, 149.0]
FAR = [400.0, 300.0, 480.0, 380.0]


def _ground_truth() -> HOIDataset:
    """Six images, two pairs each, of the three unseen combinations only."""
    images = []
    for i in range(6):
        verb, obj = UNSEEN[i % 3]
        boxes = [H, OB, [300.0, 10.0, 399.0, 209.0], [420.0, 50.0, 519.0, 149.0]]
        images.append(HOIImage.from_lists(f"{i}.jpg", boxes, [V.person, obj, V.person, obj],
                                          [[0, 1, verb], [2, 3, verb]], width=640, height=480))
    return HOIDataset.from_images(V, images, name="sg-test")


def _predictions(images: range = range(6)) -> HOIPredictions:
    """Per image: a hit on the first pair, a miss far away, and a seen class (ride bicycle)."""
    files, counts, bh, bo, obj, verb, score = [], [], [], [], [], [], []
    for i in images:
        v, o = UNSEEN[i % 3]
        files.append(f"{i}.jpg")
        counts.append(3)
        bh += [H, FAR, H]
        bo += [OB, FAR, OB]
        obj += [o, o, BICYCLE]
        verb += [v, v, RIDE]
        score += [0.9 - 0.01 * i, 0.95 - 0.01 * i, 0.5]
    return HOIPredictions.from_arrays(V, files, counts, np.array(bh), np.array(bo), obj, verb, score)


@pytest.fixture()
def split(tmp_path):
    """An SG split folder: test_combinations.json and the test ground truth beside it."""
    d = tmp_path / "sg"
    d.mkdir()
    (d / "test_combinations.json").write_text(json.dumps({
        "label_space": "hico-det",
        "combinations": [{"verb_index": v, "object_index": o} for v, o in UNSEEN]}))
    write_hicodet(_ground_truth(), d / "test_hico.json")
    write_predictions(_predictions(), tmp_path / "pred.json")
    return d, tmp_path / "pred.json"


def _eval(*args: str) -> str:
    r = CliRunner().invoke(cli, ["eval", "hico", *args])
    assert r.exit_code == 0, r.output
    return r.output


def _eval_json(*args: str) -> tuple[str, str]:
    """``eval hico ... --json -``: the JSON on stdout and what stderr said."""
    r = CliRunner().invoke(cli, ["eval", "hico", *args, "--json", "-"])
    assert r.exit_code == 0, r.output
    return r.stdout, r.stderr


# ----------------------------------------------------------------------------- the evaluator
def test_a_mean_over_no_class_with_ground_truth_is_undefined_under_every_protocol(split):
    subsets, _ = hico_class_subsets(f"unseen:{split[0]}")
    for protocol in ("official", "pocket", "qpic"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ClassesWithoutGroundTruthWarning)
            res = hico_mean_ap(_predictions(), _ground_truth(), protocol=protocol, class_subsets=subsets)
        assert np.isnan(res.subsets["seen"]), protocol  # was 0.0 under official/pocket
        assert not np.isnan(res.subsets["unseen"]) and res.subsets["unseen"] > 0
        # no rare class has ground truth here: Rare is undefined, null in the JSON
        assert np.isnan(res.rare) and res.to_json()["rare"] is None
        boot = hico_map_bootstrap(_predictions(), _ground_truth(), protocol=protocol, class_subsets=subsets,
                                  n_resamples=20, random_state=0)
        assert np.isnan(boot.estimate[boot.metrics.index("seen")])
        assert np.isnan(boot.samples[:, boot.metrics.index("seen")]).all()


def test_the_training_loop_metric_warns_once_per_compute_how_many_classes_count_as_zero():
    gt, preds = _ground_truth(), _predictions()
    metric = HICOMeanAP(protocol="official")
    for part in (range(3), range(3, 6)):  # two batches of a validation loop
        metric.update(_predictions(part), gt.subset(np.asarray(part)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = metric.compute()
        metric.compute()  # cached: no second warning
    ours = [w for w in caught if issubclass(w.category, ClassesWithoutGroundTruthWarning)]
    assert len(ours) == 1
    text = str(ours[0].message)
    assert "597 of 600 HOI classes have no ground-truth pairs" in text and "AP 0" in text
    assert "Full and Non-rare" in text and "3 classes with ground truth" in text  # Rare: undefined
    assert res.full == pytest.approx(np.nansum(res.per_class_ap) / 600)
    with pytest.warns(ClassesWithoutGroundTruthWarning, match="597 of 600"):
        hico_mean_ap(preds, gt, protocol="pocket")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ClassesWithoutGroundTruthWarning)
        hico_mean_ap(preds, gt, protocol="qpic")  # averages only classes with ground truth: no warning


# ----------------------------------------------------------------------------- the console
@pytest.mark.parametrize("protocol", ["official", "pocket", "qpic"])
def test_console_leads_with_unseen_and_prints_no_value_for_seen(split, protocol):
    d, pred = split
    out = _eval("--gt", str(d / "test_hico.json"), "--pred", str(pred), "--classes", f"unseen:{d}",
                "--protocol", protocol)
    lines = out.splitlines()
    assert lines[0].startswith("Unseen mAP "), out  # the benchmark's number comes first
    header = next(ln for ln in lines if "Full" in ln and "Rare" in ln)
    assert header.index("Unseen") < header.index("Full")
    names = [c.strip() for c in header.strip("┃ ").split("┃")]
    cells = [c.strip() for c in lines[lines.index(header) + 2].strip("│ ").split("│")]
    assert cells[names.index("Seen")] == "n/a"  # never 0.00
    assert "Seen: n/a, none of its 597 classes has ground truth" in out
    assert "pairs in 3 of 600 classes" in out
    if protocol == "qpic":
        assert "597 of 600 HOI classes have no ground-truth pairs" in out and "leaves them out" in out
        assert "warning:" not in out
    else:
        assert "warning: 597 of 600 HOI classes have no ground-truth pairs" in out
        assert "count each of them as AP 0" in out and "qpic protocol averages only the 3 classes" in out


def test_console_on_an_sg_folder_without_classes_points_to_the_unseen_number(split):
    d, pred = split
    out = _eval("--gt", str(d / "test_hico.json"), "--pred", str(pred))
    assert f"--classes unseen:{d}" in out and "warning: 597 of 600" in out
    out, err = _eval_json("--gt", str(d / "test_hico.json"), "--pred", str(pred))
    assert json.loads(out)["rare"] is None  # stdout stays the JSON alone
    assert f"--classes unseen:{d}" in err and "warning: 597 of 600" in err  # the notes go to stderr
