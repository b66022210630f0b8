"""Label spaces: sizes, consistency with the real files, COCO id conversions."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hoibench import ConfigError
from hoibench.vocab import COCO, get_label_space, hico_det, vcoco
from tests.conftest import shared_file


def test_hico_det_sizes_and_rare_split():
    h = hico_det()
    assert (h.n_objects, h.n_verbs, h.n_hois) == (80, 117, 600)
    assert h.objects[h.person] == "person"
    rare = h.rare_classes()
    assert len(rare) == 138
    assert h.train_counts_official().sum() == 117_871
    # every (verb, object) pair is a distinct class
    assert len({tuple(p) for p in h.hoi_verb_object.tolist()}) == 600


def test_hico_det_matches_toolkit_file():
    data = json.loads(shared_file("hico-det/instances_test2015.json").read_text())
    h = hico_det()
    assert list(h.objects) == data["objects"]
    assert list(h.verbs) == data["verbs"]
    for hoi, obj, verb in data["correspondence"]:
        assert h.hoi_index(verb, obj) == hoi
    assert h.rare_classes().tolist() == data["rare"]


def test_hico_hoi_names_match_hake_list():
    lines = [ln.split() for ln in shared_file("hico-det/hake/hico_hoi_list.txt").read_text().splitlines() if ln.strip()]
    h = hico_det()
    for idx, obj, verb in lines:
        v, o = h.hoi_verb_object[int(idx) - 1]
        assert (h.verbs[v], h.objects[o]) == (verb, obj)


def test_hoi_index_vectorised_and_no_object():
    h = hico_det()
    out = h.hoi_index(np.array([87, 87, 0]), np.array([7, -1, 0]))
    assert out.tolist() == [241, -1, h.hoi_index(0, 0).item()]
    assert h.hoi_name(241) == "sit_on bed"


def test_coco_ids_round_trip():
    assert COCO.to91(np.arange(80)).tolist()[:5] == [1, 2, 3, 4, 5]
    assert COCO.to91(79) == 90
    assert COCO.from91(np.array([1, 12, 90, 0, 200])).tolist() == [0, -1, 79, -1, -1]
    h = hico_det()
    objs = np.arange(80)
    assert np.array_equal(h.object_from_coco91(h.object_to_coco91(objs)), objs)
    assert h.object_to_coco91(h.object_index("bed")) == 65


def test_vcoco_label_space():
    v = vcoco()
    assert v.n_verbs == 29 and v.n_objects == 80
    assert v.verbs[:5] == ("hold_obj", "stand", "sit_instr", "ride_instr", "walk")
    assert v.n_hois == 788  # QPIC's valid (verb, object) matrix


def test_zero_shot_lists_and_errors():
    h = hico_det()
    assert len(h.zero_shot_unseen("RF-UC")) == 120
    assert len(h.zero_shot_unseen("unseen_verb")) == 84
    with pytest.raises(ConfigError, match="zero-shot setting must be one of"):
        h.zero_shot_unseen("nope")
    with pytest.raises(ConfigError, match="label space must be one of"):
        get_label_space("coco-stuff")
    with pytest.raises(ConfigError, match="unknown object"):
        h.object_index("unicorn")
