"""Bit-exactness of the HICO-DET evaluator on the real test set with realistic noisy detections.

Two oracles:

* ``tests/fixtures/hico_reference_ap_seed0.json``: per-class APs produced by the **real reference
  code** on the full real test set with ``noisy_predictions(gt, seed=0)`` (about 1.1M
  detections): QPIC's ``datasets/hico_eval.py`` (hitachi-rd-cv/qpic @ 257f314) and pocket's
  ``BoxPairAssociation`` + ``DetectionAPMeter('11P')`` driven by UPT's ``test_hico`` loop
  (fredzzhang/pocket @ bff2870, fredzzhang/upt @ 1927430); CDN's ``datasets/hico_eval.py`` with
  its pair-NMS (YueLiao/CDN @ 71c5702) for the ``cdn`` preset. MATLAB cannot run here, so the
  ``official`` column comes from the plain loop transliteration of ho-rcnn's
  ``VOCevaldet_bboxpair.m`` (``hoibench.testing``), itself checked rule by rule
  in ``test_eval_hico.py``. The script that produced the file is described in
  ``docs/protocols.md``; the reference repositories are not needed to run this test.
* the plain loop evaluator, run here on a tenth of the test set with another seed.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hoibench.evaluation import hico_mean_ap
from hoibench.formats import read_dataset
from hoibench.testing import hico_average_precision_loop, noisy_predictions
from tests.conftest import shared_file

FIXTURE = Path(__file__).parent / "fixtures" / "hico_reference_ap_seed0.json"
PROTOCOLS = ("official", "qpic", "pocket")


@pytest.fixture(scope="module")
def test_set():
    return read_dataset(shared_file("hico-det/instances_test2015.json"))


def _as_array(values):
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


def test_generator_is_realistic(test_set):
    p = noisy_predictions(test_set.subset(np.arange(0, test_set.n_images, 50)), seed=3)
    per_image = np.diff(p.offsets)
    assert per_image.min() >= 100 and per_image.max() <= 130
    assert (p.hois < 0).any()  # some invalid (verb, object) combinations
    assert len(np.unique(p.scores)) == len(p)


@pytest.mark.shared_data
def test_per_class_ap_equals_the_reference_implementations(test_set):
    ref = json.loads(FIXTURE.read_text())
    preds = noisy_predictions(test_set, seed=ref["seed"])
    fp = ref["predictions_fingerprint"]
    same_input = (len(preds) == fp["n_detections"]
                  and np.isclose(np.sum(preds.scores), fp["score_sum"], rtol=1e-12, atol=0)
                  and np.isclose(np.sum(preds.boxes_h) + np.sum(preds.boxes_o), fp["box_sum"], rtol=1e-12, atol=0))
    if not same_input:
        pytest.skip("noisy_predictions no longer generates the detections the fixture was frozen on "
                    "(numpy's random streams changed); re-run the reference scripts, see docs/protocols.md")
    for proto in (*PROTOCOLS, "cdn"):
        res = hico_mean_ap(preds, test_set, protocol=proto)
        expected = _as_array(ref["per_class_ap"][proto])
        got = res.per_class_ap.copy()
        if proto == "pocket":  # pocket reports 0 for classes without ground truth
            got = np.nan_to_num(got, nan=0.0)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(expected), err_msg=proto)
        ok = ~np.isnan(expected)
        np.testing.assert_allclose(got[ok], expected[ok], rtol=0, atol=1e-9, err_msg=proto)
        full, rare, non_rare = ref["means"][proto]  # percent, as the reference scripts print
        assert 100 * res.full == pytest.approx(full, abs=1e-9)
        assert 100 * res.rare == pytest.approx(rare, abs=1e-9)
        assert 100 * res.non_rare == pytest.approx(non_rare, abs=1e-9)


@pytest.mark.shared_data
@pytest.mark.parametrize("protocol", [*PROTOCOLS, "cdn"])
def test_vectorised_equals_the_loop_oracle_on_real_data(test_set, protocol):
    gt = test_set.subset(np.arange(0, test_set.n_images, 10))
    preds = noisy_predictions(gt, seed=11)
    fast = hico_mean_ap(preds, gt, protocol=protocol).per_class_ap
    slow = hico_average_precision_loop(preds, gt, protocol=protocol)
    np.testing.assert_array_equal(np.isnan(fast), np.isnan(slow))
    ok = ~np.isnan(slow)
    np.testing.assert_allclose(fast[ok], slow[ok], rtol=0, atol=1e-12)
    # the protocols really differ on such data (else this test would prove little)
    assert not np.allclose(np.nan_to_num(fast), np.nan_to_num(hico_mean_ap(
        preds, gt, protocol="pocket" if protocol != "pocket" else "official").per_class_ap))


@pytest.mark.shared_data
@pytest.mark.parametrize("protocol", ["qpic", "official"])
def test_tied_scores_rank_as_the_loop_oracle(test_set, protocol):
    """Scores rounded to 1/20: most entries of a class tie. The vectorised ranking re-ranks only
    the classes with ties (QPIC: numpy's unstable argsort over the appended list; official:
    MATLAB's stable sort) and must still equal the loop oracle in every class."""
    from hoibench.data import HOIPredictions

    gt = test_set.subset(np.arange(0, test_set.n_images, 20))
    p = noisy_predictions(gt, seed=5)
    tied = HOIPredictions.from_arrays(p.vocab, p.file_names, np.diff(p.offsets), p.boxes_h, p.boxes_o,
                                      p.objects, p.verbs, np.round(p.scores * 20) / 20)
    assert len(np.unique(tied.scores)) <= 21
    fast = hico_mean_ap(tied, gt, protocol=protocol).per_class_ap
    slow = hico_average_precision_loop(tied, gt, protocol=protocol)
    np.testing.assert_array_equal(np.isnan(fast), np.isnan(slow))
    ok = ~np.isnan(slow)
    np.testing.assert_allclose(fast[ok], slow[ok], rtol=0, atol=1e-12)
