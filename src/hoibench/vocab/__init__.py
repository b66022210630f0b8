"""Label spaces as data: HICO-DET (80 objects, 117 verbs, 600 HOI classes, rare/non-rare,
zero-shot lists), V-COCO (29 action-role verbs, 26 actions with roles, the annotated
verb-object pairs), SWiG-HOI's 407 action names, COCO 80 ⇄ 91 ids."""

from hoibench.vocab._labelspace import (
    COCO,
    ZERO_SHOT_ALIASES,
    LabelSpace,
    get_label_space,
    hico_det,
    normalize_name,
    swig_hoi_actions,
    vcoco,
    vcoco_actions,
    vcoco_annotated_objects,
    vcoco_crosshoi_phrases,
)

__all__ = [
    "COCO",
    "ZERO_SHOT_ALIASES",
    "LabelSpace",
    "get_label_space",
    "hico_det",
    "normalize_name",
    "swig_hoi_actions",
    "vcoco",
    "vcoco_actions",
    "vcoco_annotated_objects",
    "vcoco_crosshoi_phrases",
]
