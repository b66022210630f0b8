"""Bootstrap CIs of HICO-DET mAP, paired comparison and rank stability.

The central claim: resampling test images is the same as weighting them, because a detection's
TP/FP status depends only on its own image and class. It is proved by re-running the full
evaluator on physically resampled data (every drawn copy of an image renamed) and comparing
per-class AP and mAP with the weighted computation, for every protocol, on synthetic and real
ground truth.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

import hoibench.analysis._map_bootstrap as mb
from hoibench._exceptions import ConfigError, ValidationError
from hoibench.analysis import WeightedHICOMap, compare_hico_models, hico_map_bootstrap
from hoibench.cli import cli
from hoibench.data import HOIDataset, HOIImage, HOIPredictions
from hoibench.evaluation import hico_mean_ap, match_hico_detections, voc11_ap, weighted_voc11_ap
from hoibench.formats import write_predictions
from hoibench.reports import (
    paired_difference_table,
    rank_distribution_figure,
    rank_distribution_table,
)
from hoibench.testing import noisy_predictions
from hoibench.vocab import hico_det
from tests.conftest import shared_file

V = hico_det()
PROTOCOLS = ("official", "qpic", "pocket", "cdn")


# ----------------------------------------------------------------------------- helpers
def synthetic_ground_truth(n_images: int = 90, seed: int = 0) -> HOIDataset:
    """Random images with 0-4 pairs over a dozen classes (some rare), a few without pairs."""
    rng = np.random.default_rng(seed)
    rare = V.rare_classes()
    classes = np.r_[rare[:5], np.setdiff1d(np.arange(V.n_hois), rare)[:7]]
    images = []
    for i in range(n_images):
        boxes, labels, pairs = [], [], []
        for _ in range(int(rng.integers(0, 5))):
            verb, obj = V.hoi_verb_object[rng.choice(classes)]
            xy = rng.uniform(0, 400, size=(2, 2))
            wh = rng.uniform(30, 200, size=(2, 2))
            boxes += [[*xy[0], *(xy[0] + wh[0])], [*xy[1], *(xy[1] + wh[1])]]
            labels += [V.person, int(obj)]
            pairs.append([len(boxes) - 2, len(boxes) - 1, int(verb)])
        images.append(HOIImage.from_lists(f"img_{i:04d}.jpg", boxes, labels, pairs, width=640, height=640))
    return HOIDataset.from_images(V, images, name="synthetic")


def physical_resample(gt: HOIDataset, preds: HOIPredictions, weights: np.ndarray
                      ) -> tuple[HOIDataset, HOIPredictions]:
    """The resampled test set as real data: image ``j`` repeated ``weights[j]`` times, renamed."""
    w = np.asarray(weights, dtype=np.int64)
    idx = np.repeat(np.arange(gt.n_images), w)
    copy = np.concatenate([np.arange(k) for k in w]) if len(idx) else np.zeros(0, np.int64)
    sub = gt.subset(idx)
    names = [f"{gt.file_names[j]}#copy{c}" for j, c in zip(idx.tolist(), copy.tolist())]
    gt2 = HOIDataset(vocab=sub.vocab, file_names=names, widths=sub.widths, heights=sub.heights,
                     image_ids=sub.image_ids, box_offsets=sub.box_offsets, boxes=sub.boxes,
                     box_labels=sub.box_labels, pair_offsets=sub.pair_offsets,
                     pair_subject=sub.pair_subject, pair_object=sub.pair_object,
                     pair_verb=sub.pair_verb, name="resampled")
    where = {f: i for i, f in enumerate(preds.file_names)}
    files, counts, rows = [], [], []
    # write the copies in reverse so the file order differs from the ground truth's
    for j, name in reversed(list(zip(idx.tolist(), names))):
        i = where.get(gt.file_names[j])
        if i is None:
            continue
        s = preds.image_slice(i)
        files.append(name)
        counts.append(s.stop - s.start)
        rows.append(np.arange(s.start, s.stop))
    r = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    p2 = HOIPredictions.from_arrays(preds.vocab, files, counts, preds.boxes_h[r], preds.boxes_o[r],
                                    preds.objects[r], preds.verbs[r], preds.scores[r])
    return gt2, p2


def assert_resamples_exact(gt: HOIDataset, preds: HOIPredictions, protocol: str, weights: np.ndarray,
                           **options) -> None:
    subsets = {"odd": np.arange(1, V.n_hois, 2)}
    engine = WeightedHICOMap(match_hico_detections(preds, gt, protocol=protocol, **options), gt,
                             class_subsets=subsets)
    class_ap = engine.class_ap(weights)
    maps = engine.mean_ap(weights)
    assert engine.metric_names == ("full", "rare", "non_rare", "odd")
    for b, w in enumerate(weights):
        g2, p2 = physical_resample(gt, preds, w)
        ref = hico_mean_ap(p2, g2, protocol=protocol, class_subsets=subsets, **options)
        np.testing.assert_array_equal(np.isnan(class_ap[b]), np.isnan(ref.per_class_ap))
        ok = ~np.isnan(ref.per_class_ap)
        np.testing.assert_allclose(class_ap[b][ok], ref.per_class_ap[ok], rtol=0, atol=1e-12)
        expected = [ref.full, ref.rare, ref.non_rare, ref.subsets["odd"]]
        np.testing.assert_allclose(maps[b], expected, rtol=0, atol=1e-12, equal_nan=True)


@pytest.fixture(scope="module")
def synthetic() -> tuple[HOIDataset, HOIPredictions]:
    gt = synthetic_ground_truth()
    return gt, noisy_predictions(gt, seed=3, per_image=(8, 30))


# ----------------------------------------------------------------------------- weighted AP
@pytest.mark.parametrize("flavour", ["matlab", "arange", "linspace", "decimal"])
def test_weighted_voc11_ap_equals_ap_of_the_expanded_sequence(flavour):
    rng = np.random.default_rng(7)
    for _ in range(300):
        n = int(rng.integers(1, 25))
        tp = rng.random(n) < rng.uniform(0.1, 0.9)
        w = rng.integers(0, 4, size=n)
        n_gt = max(int((w * tp).sum() + rng.integers(0, 4)), 1)
        expanded = np.repeat(tp, w).astype(np.float64)
        ctp, cfp = np.cumsum(expanded), np.cumsum(1 - expanded)
        want = voc11_ap(ctp / n_gt, ctp / (ctp + cfp), thresholds=flavour)
        got = weighted_voc11_ap(tp, w, n_gt, thresholds=flavour)
        assert got == want  # bit-identical: same counts, same float operations
    assert np.isnan(weighted_voc11_ap(np.array([True]), np.array([1]), 0))


def test_weighted_ap_hits_recall_thresholds_exactly():
    # 3 of 10 found at the end of a run of copies: recall exactly 0.3 (matlab's 0.3 is one ulp above)
    tp, w = np.array([True, False, True]), np.array([1, 2, 2])
    assert weighted_voc11_ap(tp, w, 10, thresholds="decimal") > weighted_voc11_ap(tp, w, 10, thresholds="matlab")


# ----------------------------------------------------------------------------- exactness
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_weights_equal_physical_resampling_synthetic(synthetic, protocol):
    gt, preds = synthetic
    rng = np.random.default_rng(11)
    w = rng.multinomial(gt.n_images, np.full(gt.n_images, 1 / gt.n_images), size=4)
    w[3] = 0  # an extreme resample: a handful of images, drawn many times
    w[3, [0, 5, 17]] = [30, 1, 59]
    assert_resamples_exact(gt, preds, protocol, w)


def test_weights_equal_physical_resampling_known_object(synthetic):
    gt, preds = synthetic
    w = np.random.default_rng(5).multinomial(gt.n_images, np.full(gt.n_images, 1 / gt.n_images), size=2)
    assert_resamples_exact(gt, preds, "official", w, known_object=True)


def test_unit_weights_reproduce_the_evaluator_bit_for_bit(synthetic):
    gt, preds = synthetic
    for protocol in PROTOCOLS:
        ref = hico_mean_ap(preds, gt, protocol=protocol)
        engine = WeightedHICOMap(match_hico_detections(preds, gt, protocol=protocol), gt)
        ap = engine.class_ap(np.ones((1, gt.n_images)))[0]
        np.testing.assert_array_equal(ap, ref.per_class_ap)


def test_duplicating_every_image_changes_nothing(synthetic):
    gt, preds = synthetic
    engine = WeightedHICOMap(match_hico_detections(preds, gt, protocol="pocket"), gt)
    ones = engine.class_ap(np.ones((1, gt.n_images)))
    np.testing.assert_array_equal(engine.class_ap(np.full((1, gt.n_images), 3.0)), ones)


def test_no_detections_and_huge_weights(synthetic):
    gt, preds = synthetic
    empty = preds.select(np.zeros(len(preds), dtype=bool))
    engine = WeightedHICOMap(match_hico_detections(empty, gt), gt)
    w = np.random.default_rng(0).multinomial(gt.n_images, np.full(gt.n_images, 1 / gt.n_images), size=3)
    ap = engine.class_ap(w)
    assert np.nanmax(ap) == 0 and np.isnan(ap).any()
    # weights whose cumulative counts overflow int32 switch to int64: same AP as weights 1
    full = WeightedHICOMap(match_hico_detections(preds, gt), gt)
    np.testing.assert_array_equal(full.class_ap(np.full((1, gt.n_images), 2.0 ** 30)),
                                  full.class_ap(np.ones((1, gt.n_images))))


def test_chunking_does_not_change_results(synthetic, monkeypatch):
    gt, preds = synthetic
    engine = WeightedHICOMap(match_hico_detections(preds, gt), gt)
    w = np.random.default_rng(2).multinomial(gt.n_images, np.full(gt.n_images, 1 / gt.n_images), size=7)
    whole = engine.class_ap(w)
    monkeypatch.setattr(mb, "_BLOCK_ELEMENTS", 1)  # one replicate per block
    np.testing.assert_array_equal(engine.class_ap(w), whole)


@pytest.mark.parametrize("protocol", ["official", "qpic", "pocket"])
def test_weights_equal_physical_resampling_real_test_set(protocol):
    from hoibench.formats import read_dataset

    full = read_dataset(shared_file("hico-det/instances_test2015.json"))
    gt = full.subset(np.arange(0, full.n_images, 10))  # ~970 real images, incl. some without pairs
    preds = noisy_predictions(gt, seed=4, per_image=(20, 40))
    w = np.random.default_rng(1).multinomial(gt.n_images, np.full(gt.n_images, 1 / gt.n_images), size=2)
    assert_resamples_exact(gt, preds, protocol, w)


# ----------------------------------------------------------------------------- bootstrap API
def test_bootstrap_is_seeded_and_brackets_the_estimate(synthetic):
    gt, preds = synthetic
    a = hico_map_bootstrap(preds, gt, n_resamples=200, random_state=3, method="percentile")
    b = hico_map_bootstrap(preds, gt, n_resamples=200, random_state=3, method="percentile")
    c = hico_map_bootstrap(preds, gt, n_resamples=200, random_state=4, method="percentile")
    np.testing.assert_array_equal(a.samples, b.samples)
    assert not np.array_equal(a.samples, c.samples)
    ref = hico_mean_ap(preds, gt)
    np.testing.assert_allclose(a.estimate[:3], [ref.full, ref.rare, ref.non_rare], rtol=0, atol=1e-12)
    lo, hi = a.ci("full")
    assert 0 < lo < ref.full < hi < 1 and hi - lo > 0.1 * ref.full  # fractions, like the estimate
    ci = a.to_ci()
    assert ci.intervals["full"] == (lo, hi) and ci.confidence == 0.95 and ci.n_resamples == 200 and ci.seed == 3
    j = ci.to_json()  # the JSON of a hico_map result keeps percent
    assert j["full"] == [100 * lo, 100 * hi] and j["level"] == 0.95 and j["n_boot"] == 200
    # a wider level gives a wider interval
    w99 = hico_map_bootstrap(preds, gt, n_resamples=200, random_state=3, confidence=0.99,
                             method="percentile")
    assert w99.ci("full")[0] <= lo and w99.ci("full")[1] >= hi
    with pytest.raises(ConfigError):
        a.ci("nope")
    # bias = replicate mean - estimate; "basic" reflects the percentile interval about the estimate
    np.testing.assert_allclose(a.bias, a.samples.mean(axis=0) - a.estimate)
    assert j["bias"]["full"] == pytest.approx(100 * a.bias[0]) and j["method"] == "percentile"
    basic = hico_map_bootstrap(preds, gt, n_resamples=200, random_state=3, method="basic")

    np.testing.assert_allclose(basic.low, 2 * a.estimate - a.high)
    np.testing.assert_allclose(basic.high, 2 * a.estimate - a.low)
    assert basic.to_ci().method == "basic"
    with pytest.raises(ConfigError, match="CI method"):
        hico_map_bootstrap(preds, gt, n_resamples=5, method="bca")


def test_bootstrap_replicates_are_evaluator_runs_on_resampled_data(synthetic):
    """The samples are what the evaluator gives on the resamples that bootstrap_weights draws."""
    from hoibench._random import check_random_state
    from hoibench.evaluation import bootstrap_weights

    gt, preds = synthetic
    r = hico_map_bootstrap(preds, gt, n_resamples=3, random_state=9, protocol="qpic")
    w = bootstrap_weights(gt.n_images, 3, check_random_state(9))
    for b in range(3):
        g2, p2 = physical_resample(gt, preds, w[b].astype(np.int64))
        ref = hico_mean_ap(p2, g2, protocol="qpic")
        np.testing.assert_allclose(r.samples[b], [ref.full, ref.rare, ref.non_rare], rtol=0, atol=1e-12)


def test_paired_comparison_uses_the_same_resamples(synthetic):
    gt, preds = synthetic
    worse = noisy_predictions(gt, seed=3, per_image=(8, 30))
    worse = HOIPredictions.from_arrays(V, worse.file_names, np.diff(worse.offsets), worse.boxes_h + 25.0,
                                       worse.boxes_o, worse.objects, worse.verbs, worse.scores)
    cmp = compare_hico_models({"good": preds, "shifted": worse, "same": preds}, gt, n_resamples=150,
                              random_state=0)
    single = hico_map_bootstrap(preds, gt, n_resamples=150, random_state=0)
    np.testing.assert_allclose(cmp.samples[:, 0, :], single.samples, rtol=0, atol=0)
    d = cmp.paired_difference("good", "shifted")
    assert d["difference"] > 0 and d["p_a_better"] > 0.95 and d["ci_low"] > 0
    np.testing.assert_allclose(d["difference"], cmp.estimate[0, 0] - cmp.estimate[1, 0])
    same = cmp.paired_difference("good", "same")
    assert same["ci_low"] == same["ci_high"] == 0 and same["p_tie"] == 1
    rows = cmp.paired_differences(reference="shifted")
    assert [r["model_b"] for r in rows] == ["good", "same"]
    assert len(cmp.paired_differences()) == 3
    # rank stability: the shifted model is always last; good and same tie for first
    dist = cmp.rank_distribution()
    np.testing.assert_allclose(dist.sum(axis=1), 1)
    assert dist[1, 2] == 1 and dist[0, 0] == 1 and dist[2, 0] == 1
    stab = {s.model: s for s in cmp.rank_stability()}
    assert stab["shifted"].rank == 3 and stab["shifted"].p_same_rank == 1 and stab["good"].p_first == 1
    t = paired_difference_table(cmp)
    assert "good" in t.to_markdown() and t.to_csv().count("\n") == 4
    t2 = rank_distribution_table(cmp)
    assert "p_rank_3" in t2.columns
    fig = rank_distribution_figure(cmp)
    assert fig.png.startswith(b"\x89PNG")


def test_errors(synthetic):
    gt, preds = synthetic
    m = match_hico_detections(preds, gt)
    with pytest.raises(ValidationError, match="disagree"):
        WeightedHICOMap(m, gt.subset(np.arange(10)))
    engine = WeightedHICOMap(m, gt)
    with pytest.raises(ValidationError, match="shape"):
        engine.class_ap(np.ones((1, 3)))
    with pytest.raises(ValidationError, match="whole numbers"):
        engine.class_ap(np.full((1, gt.n_images), 0.5))
    with pytest.raises(ConfigError):
        hico_map_bootstrap(preds, gt, n_resamples=0)
    with pytest.raises(ConfigError, match="differs"):
        WeightedHICOMap(m, gt, class_subsets={"full": [1]})
    same = WeightedHICOMap(m, gt, class_subsets={"rare": V.rare_classes()})  # eval hico --classes rare
    assert same.metric_names == ("full", "rare", "non_rare")
    with pytest.raises(ValidationError):
        compare_hico_models({"a": preds}, gt)


# ----------------------------------------------------------------------------- CLI
def _write_gt_and_preds(tmp_path, gt: HOIDataset, preds: dict[str, HOIPredictions]) -> tuple[str, list[str]]:
    from hoibench.formats import write_dataset

    gt_path = tmp_path / "gt.json"
    write_dataset(gt, gt_path, format="hicodet")
    paths = []
    for name, p in preds.items():
        path = tmp_path / f"{name}.json"
        write_predictions(p, path, format="hoibench")
        paths.append(str(path))
    return str(gt_path), paths


def test_cli_eval_hico_bootstrap(tmp_path, synthetic):
    gt, preds = synthetic
    gt_path, (pred_path,) = _write_gt_and_preds(tmp_path, gt, {"model": preds})
    out = tmp_path / "res.json"
    r = CliRunner().invoke(cli, ["eval", "hico", "--gt", gt_path, "--pred", pred_path, "--bootstrap", "100",
                                 "--seed", "5", "--json", str(out)])
    assert r.exit_code == 0, r.output
    res = json.loads(out.read_text())
    ci = res["ci"]  # one model's mAP: its bootstrap SE, no interval (none passed the coverage check)
    assert ci["n_boot"] == 100 and ci["seed"] == 5 and ci["method"] == "se" and "level" not in ci
    assert "full" not in ci and ci["se"]["full"] > 0
    assert "bootstrap SE" in r.output and "bias" in r.output and "CI" not in r.output.replace("CIs", "")
    r2 = CliRunner().invoke(cli, ["eval", "hico", "--gt", gt_path, "--pred", pred_path, "--bootstrap", "100",
                                  "--seed", "5", "--json", "-"])
    assert json.loads(r2.stdout)["ci"] == ci  # seeded; the progress bar stays off stdout
    for bad in (["--ci", "90"], ["--ci-method", "percentile"], ["--ci", "120"]):
        r3 = CliRunner().invoke(cli, ["eval", "hico", "--gt", gt_path, "--pred", pred_path, "--bootstrap", "10",
                                      *bad])
        assert r3.exit_code != 0 and ("coverage check" in str(r3.exception) or "120" in bad), r3.output


def test_cli_analyze_compare(tmp_path, synthetic):
    gt, preds = synthetic
    worse = HOIPredictions.from_arrays(V, preds.file_names, np.diff(preds.offsets), preds.boxes_h + 20.0,
                                       preds.boxes_o, preds.objects, preds.verbs, preds.scores)
    gt_path, paths = _write_gt_and_preds(tmp_path, gt, {"a": preds, "b": worse})
    out = tmp_path / "cmp"
    r = CliRunner().invoke(cli, ["analyze", "compare", "--gt", gt_path, "--pred", paths[0], "--pred", paths[1],
                                 "--bootstrap", "80", "--seed", "1", "--out", str(out)])
    assert r.exit_code == 0, r.output
    files = sorted(p.name for p in out.iterdir())
    assert {"paired-difference-full.md", "paired-difference-full.csv", "rank-stability-full.csv",
            "rank-distribution-full.png", "map-se.csv"} <= set(files)
    csv_text = (out / "paired-difference-full.csv").read_text()
    assert csv_text.splitlines()[1].startswith("a,b,")
    assert {"full_bias", "full_se"} <= set((out / "map-se.csv").read_text().splitlines()[0].split(","))
    assert r.output.index("Paired mAP differences") < r.output.index("bootstrap standard error")
    one = CliRunner().invoke(cli, ["analyze", "compare", "--gt", gt_path, "--pred", paths[0]])
    assert one.exit_code != 0
    ref = CliRunner().invoke(cli, ["analyze", "compare", "--gt", gt_path, "--pred", paths[0], "--pred", paths[1],
                                   "--bootstrap", "20", "--reference", "b", "--metric", "rare",
                                   "--ci-method", "basic", "--out", str(out)])
    assert ref.exit_code == 0, ref.output
    assert (out / "paired-difference-rare.csv").read_text().splitlines()[1].startswith("b,a,")
    for bad in (["--metric", "unseen"], ["--reference", "c"]):
        r = CliRunner().invoke(cli, ["analyze", "compare", "--gt", gt_path, "--pred", paths[0], "--pred",
                                     paths[1], *bad])
        assert r.exit_code != 0 and bad[1] in str(r.exception)
