"""Built-in baselines: object-prior detector, prior answerer, random answerer."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest

from hoibench import ConfigError, ValidationError
from hoibench.data import Choice, HOIDataset, HOIImage, MCQuestion
from hoibench.runners import ObjectPriorDetector, PriorAnswerer, RandomAnswerer, verb_object_counts
from hoibench.vocab import hico_det

V = hico_det()
HORSE, BICYCLE, PERSON = V.object_index("horse"), V.object_index("bicycle"), V.person
RIDE, FEED, HOLD, WALK = (V.verb_index(n) for n in ("ride", "feed", "hold", "walk"))


def _img(name, pairs_spec):
    """pairs_spec: list of (object label, verb, box offset) → one person and one object per offset."""
    boxes, labels, pairs, where = [], [], [], {}
    for obj, verb, k in pairs_spec:
        if k not in where:
            where[k] = len(boxes)
            boxes += [[k, k, k + 10, k + 20], [k + 5, k + 5, k + 30, k + 30]]
            labels += [PERSON, obj]
        pairs.append([where[k], where[k] + 1, verb])
    return HOIImage.from_lists(name, boxes, labels, pairs, width=100, height=100)


TRAIN = HOIDataset.from_images(V, [
    _img("t1.jpg", [(HORSE, RIDE, 0), (HORSE, FEED, 40)]),
    _img("t2.jpg", [(HORSE, RIDE, 0), (HORSE, RIDE, 40), (BICYCLE, RIDE, 70)]),
    _img("t3.jpg", [(BICYCLE, HOLD, 0)]),
])


def test_prior_is_train_frequency_per_object():
    det = ObjectPriorDetector().fit(TRAIN)
    assert det.prior_[RIDE, HORSE] == pytest.approx(3 / 4)
    assert det.prior_[FEED, HORSE] == pytest.approx(1 / 4)
    assert det.prior_[RIDE, BICYCLE] == pytest.approx(1 / 2)
    assert det.prior_[:, HORSE].sum() == pytest.approx(1.0)
    counts = verb_object_counts(TRAIN)
    assert counts.sum() == TRAIN.n_pairs and counts[RIDE, HORSE] == 3


def test_predict_scores_every_distinct_pair_with_its_object_prior():
    # a pair annotated twice (ride + feed on the same boxes) is one detection set; an unseen
    # object (cow) gets no detection; walk-horse has no train count, so it is never predicted.
    cow = V.object_index("cow")
    test = HOIDataset.from_images(V, [
        _img("a.jpg", [(HORSE, RIDE, 0), (HORSE, WALK, 0), (BICYCLE, HOLD, 50)]),
        _img("b.jpg", [(cow, FEED, 0)]),
        _img("c.jpg", []),
    ])
    preds = ObjectPriorDetector().fit(TRAIN).predict(test)
    assert preds.file_names == test.file_names
    assert np.diff(preds.offsets).tolist() == [4, 0, 0]
    got = sorted(zip(preds.objects.tolist(), preds.verbs.tolist(), preds.scores.round(6).tolist()))
    assert got == sorted([(HORSE, RIDE, 0.75), (HORSE, FEED, 0.25), (BICYCLE, RIDE, 0.5),
                          (BICYCLE, HOLD, 0.5)])
    img = test.image(0)
    horse_rows = preds.objects == HORSE
    assert np.all(preds.boxes_h[horse_rows] == img.boxes[0])
    assert np.all(preds.boxes_o[horse_rows] == img.boxes[1])
    # most probable verb first within a pair
    assert preds.verbs[:2].tolist() == [RIDE, FEED]


def test_top_k_keeps_the_most_frequent_verbs():
    test = HOIDataset.from_images(V, [_img("a.jpg", [(HORSE, RIDE, 0), (BICYCLE, HOLD, 50)])])
    preds = ObjectPriorDetector(top_k=1).fit(TRAIN).predict(test)
    # bicycle: ride and hold tie at 0.5 → lower verb index first
    assert sorted(zip(preds.objects.tolist(), preds.verbs.tolist())) == sorted(
        [(HORSE, RIDE), (BICYCLE, min(RIDE, HOLD))])


def test_detector_errors():
    with pytest.raises(ConfigError, match="top_k must be a positive int"):
        ObjectPriorDetector(top_k=0)
    with pytest.raises(ValidationError, match="call fit"):
        ObjectPriorDetector().predict(TRAIN)


def test_object_prior_on_bundled_hico_det_covers_exactly_the_seen_combinations():
    from hoibench.datasets import load_dataset

    train, test = load_dataset("hico-det:train"), load_dataset("hico-det:test")
    preds = ObjectPriorDetector().fit(train).predict(test)
    seen = verb_object_counts(train)[:, :-1] > 0
    # every predicted (verb, object) was seen in train, and every seen combination of an object
    # present in a test pair is predicted
    assert seen[preds.verbs, preds.objects].all()
    test_objects = np.unique(test.pair_object_label)
    expected = {(int(v), int(o)) for o in test_objects for v in np.flatnonzero(seen[:, o])}
    assert set(zip(preds.verbs.tolist(), preds.objects.tolist())) == expected
    # one detection per (distinct pair, verb seen with its object)
    key = np.column_stack([test.pair_image, test.pair_subject_boxes, test.pair_object_boxes,
                           test.pair_object_label])
    distinct = np.unique(key, axis=0)
    assert len(preds) == int(seen[:, distinct[:, -1].astype(int)].sum())
    assert np.all(np.isfinite(preds.scores)) and preds.scores.max() <= 1.0


# ---------------------------------------------------------------------------------- answerers
def _question(qid, choices, correct, setting=1):
    return MCQuestion(id=qid, file_name=f"{qid}.jpg", setting=setting,
                      choices=tuple(Choice(f"{V.verbs[v]} a/an {V.objects[o]}", V.hoi_index(v, o).item(), v, o)
                                    for v, o in choices),
                      correct=frozenset(correct))


def test_prior_answerer_picks_most_frequent_choices():
    q = _question("q1", [(FEED, HORSE), (RIDE, HORSE), (WALK, HORSE), (HOLD, HORSE)], {0})
    a1 = PriorAnswerer(k=1).fit(TRAIN).answer([q])[0]
    assert a1.selected == {q.choices[1].text} and a1.question_id == "q1"
    a2 = PriorAnswerer(k=2).fit(TRAIN).answer([q])[0]
    assert a2.selected == {q.choices[1].text, q.choices[0].text}


def test_prior_answerer_breaks_ties_by_presentation_order_not_storage():
    # no choice was seen in train: all tie, so the pick is the first choice as presented
    choices = [(WALK, HORSE), (HOLD, HORSE), (V.verb_index("pet"), HORSE), (V.verb_index("jump"), HORSE)]
    picks = Counter()
    for i in range(40):
        q = _question(f"tie{i}", choices, {0})
        a = PriorAnswerer(k=1, seed=3).fit(TRAIN).answer([q])[0]
        first = q.choices[q.order(3)[0]].text
        assert a.selected == {first}
        picks[first] += 1
    assert len(picks) > 1  # not always the stored first choice


def test_random_answerer_is_uniform_over_non_empty_subsets_and_reproducible():
    qs = [_question(f"r{i}", [(RIDE, HORSE), (FEED, HORSE), (HOLD, HORSE)], {0}) for i in range(1400)]
    a = RandomAnswerer(random_state=7).answer(qs)
    b = RandomAnswerer(random_state=7).answer(list(reversed(qs)))
    assert [x.selected for x in a] == [x.selected for x in reversed(b)]  # order-independent
    assert all(x.selected and x.selected <= set(q.choice_texts) for x, q in zip(a, qs))
    freq = Counter(x.selected for x in a)
    assert set(freq) == {frozenset(s) for r in (1, 2, 3)
                         for s in itertools.combinations(qs[0].choice_texts, r)}
    # 7 subsets, 200 expected each; a loose band that a biased sampler would leave
    assert all(140 < c < 260 for c in freq.values())
    other = RandomAnswerer(random_state=8).answer(qs)
    assert [x.selected for x in other] != [x.selected for x in a]
    with pytest.raises(ConfigError, match="random_state"):
        RandomAnswerer(random_state="x").answer(qs[:1])
