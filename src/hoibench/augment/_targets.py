"""The classes an augmentation run fills: :class:`TargetClass` and the reader of the balanced
split's ``deficits.json`` (contract in ``docs/interfaces.md``). Below the pipeline and the
sharding, which both take target classes."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from hoibench._exceptions import FormatError
from hoibench._io import read_json
from hoibench.vocab import LabelSpace

__all__ = ["TargetClass", "read_deficits"]


@dataclass(frozen=True)
class TargetClass:
    """A class to fill: HOI index, its verb and object indices, and how many instances to add
    (``need = 0`` in :func:`~hoibench.augment.filter_images` means "keep every image that passes")."""

    hoi: int
    verb: int
    object: int
    need: int
    name: str = ""

    @classmethod
    def of(cls, vocab: LabelSpace, hoi: int, need: int) -> TargetClass:
        v, o = (int(x) for x in vocab.hoi_verb_object[hoi])
        return cls(hoi=int(hoi), verb=v, object=o, need=int(need), name=vocab.hoi_name(hoi))


def _int_field(rec: dict[str, Any], key: str, path: object, n: int) -> int:
    val = rec.get(key)
    if not isinstance(val, int) or isinstance(val, bool):
        raise FormatError(f"expected an integer; got {val!r}", file=path, record=n, field=key)
    return val


def read_deficits(path: str | os.PathLike[str], vocab: LabelSpace, *,
                  split: str = "train") -> list[TargetClass]:
    """The classes of ``deficits.json`` (contract in ``docs/interfaces.md``) that lack instances in
    ``split``. Test-set deficits are never filled with synthetic images (the paper's test set is
    real images only), so only ``split="train"`` entries are returned by default."""
    data = read_json(path)
    if not isinstance(data, dict) or data.get("kind") != "balanced_deficits":
        raise FormatError("not a deficits file (expected \"kind\": \"balanced_deficits\")", file=path,
                          field="kind")
    classes = data.get("classes")
    if not isinstance(classes, list):
        raise FormatError("expected a list", file=path, field="classes")
    out: list[TargetClass] = []
    seen: set[int] = set()
    for n, rec in enumerate(classes):
        if not isinstance(rec, dict):
            raise FormatError("expected an object", file=path, record=n, field="classes")
        hoi, verb, obj = (_int_field(rec, k, path, n) for k in ("hoi", "verb", "object"))
        deficit = _int_field(rec, "deficit", path, n)
        if not 0 <= hoi < vocab.n_hois:
            raise FormatError(f"HOI class {hoi} is outside 0..{vocab.n_hois - 1} of {vocab.name}",
                              file=path, record=n, field="hoi")
        if tuple(vocab.hoi_verb_object[hoi]) != (verb, obj):
            raise FormatError(f"HOI class {hoi} is ({vocab.hoi_name(hoi)}), not verb {verb} "
                              f"and object {obj}", file=path, record=n, field="verb")
        if "need" in rec and "have" in rec and rec["need"] - rec["have"] != deficit:
            raise FormatError(f"deficit {deficit} differs from need - have = {rec['need'] - rec['have']}",
                              file=path, record=n, field="deficit")
        if deficit < 0:
            raise FormatError(f"deficit must be >= 0; got {deficit}", file=path, record=n, field="deficit")
        rec_split = rec.get("split", "train")
        if rec_split not in ("train", "test", "zero_shot"):
            raise FormatError(f"split must be 'train', 'test' or 'zero_shot'; got {rec_split!r}",
                              file=path, record=n, field="split")
        if rec_split != split or deficit == 0:
            continue
        if hoi in seen:
            raise FormatError(f"HOI class {hoi} is listed twice", file=path, record=n, field="hoi")
        seen.add(hoi)
        out.append(TargetClass.of(vocab, hoi, deficit))
    return out
