"""The released HICO-DET-SG / V-COCO-SG splits: their parameters (:data:`PRESETS`) and the test
entries deleted from the released files after generation (the one reader of that file)."""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from importlib import resources
from typing import Any

from hoibench._exceptions import ConfigError, FormatError
from hoibench._io import read_json

__all__ = ["PRESETS", "SGPreset", "get_preset", "load_released_removals", "reference_preset"]

#: the bundled removals file, inside the ``hoibench.benchmarks`` package
REMOVALS_RESOURCE = ("data", "hoi_sg_released_test_removals.json")


@dataclass(frozen=True)
class SGPreset:
    """The parameters of one released split.

    ``inherit`` names the preset whose in-place pair deletions this one inherited (the released
    split 3 was generated in the same process right after split 2).
    """

    name: str
    dataset: str
    seed: int
    ratio: float
    inherit: str | None = None


PRESETS: dict[str, SGPreset] = {
    p.name: p
    for p in (
        SGPreset("hico-det-sg1", "hico-det", 368, 0.9),
        SGPreset("hico-det-sg2", "hico-det", 680, 0.9),
        SGPreset("hico-det-sg3", "hico-det", 750, 0.9, inherit="hico-det-sg2"),
        SGPreset("v-coco-sg1", "v-coco", 564, 0.7),
        SGPreset("v-coco-sg2", "v-coco", 966, 0.7),
        SGPreset("v-coco-sg3", "v-coco", 2065, 0.7),
    )
}
_PRESET_ALIASES = {f"{p.dataset.split('-')[0]}-sg{p.name[-1]}": p.name for p in PRESETS.values()}
_PRESET_ALIASES.update({f"sg{i}": f"hico-det-sg{i}" for i in (1, 2, 3)})


def get_preset(name: str) -> SGPreset:
    """A preset by name (``hico-det-sg1`` ... ``v-coco-sg3``; ``sg2`` means ``hico-det-sg2``)."""
    key = name.lower().replace("_", "-").replace("hicodet", "hico-det").replace("vcoco", "v-coco")
    key = _PRESET_ALIASES.get(key, key)
    if key not in PRESETS:
        raise ConfigError(f"preset must be one of {sorted(PRESETS)}; got {name!r}")
    return PRESETS[key]


def reference_preset(label_space: str, seed: int, ratio: float, name: str = "") -> str | None:
    """The released split named ``name``, or else the one with this label space, seed and ratio
    (its paper Table 1 row and released counts are what a split is compared with)."""
    if name in PRESETS:
        return name
    for p in PRESETS.values():
        if p.dataset == label_space and p.seed == seed and abs(p.ratio - ratio) < 1e-9:
            return p.name
    return None


# --------------------------------------------------------------------------- removals file
@functools.cache
def _bundled_removals() -> Any:
    return json.loads(resources.files("hoibench.benchmarks").joinpath(*REMOVALS_RESOURCE).read_bytes())


def load_released_removals(preset: str | None = None,
                           path: str | os.PathLike[str] | None = None) -> tuple[str, ...]:
    """File names deleted from a released test file after generation (empty for V-COCO-SG).

    The lists ship with hoibench (``benchmarks/data/hoi_sg_released_test_removals.json``, an
    object ``{split name: [file names]}`` derived from the repository's history; keys starting
    with ``_`` are comments). ``path`` reads another file: of that layout, or a plain list of
    file names. Without ``preset`` the file must hold exactly one list, which is returned.
    """
    if path is None:
        if preset is None:
            raise ConfigError("the bundled removals hold one list per released split; name the preset")
        data, file = _bundled_removals(), "hoi_sg_released_test_removals.json (bundled)"
        # a preset without deleted entries (V-COCO-SG) has no list in the bundled file
        return _removal_list(data, file, get_preset(preset).name, missing_ok=True)
    return _removal_list(read_json(path), path, preset, missing_ok=False)


def _removal_list(data: Any, file: object, preset: str | None, *, missing_ok: bool) -> tuple[str, ...]:
    key: str | None = None
    if isinstance(data, dict):
        lists = {k: v for k, v in data.items() if not str(k).startswith("_")}
        if preset is None:
            if len(lists) != 1:
                raise FormatError(f"holds {len(lists)} lists; give a list of file names (or use --preset, "
                                  "which picks its own list)", file=file)
            key, data = next(iter(lists.items()))
        elif preset in lists:
            key, data = preset, lists[preset]
        elif missing_ok:
            return ()
        else:
            raise FormatError(f"has no list for {preset} (it lists {sorted(lists) or 'none'})", file=file)
    if not isinstance(data, list) or not all(isinstance(n, str) for n in data):
        raise FormatError("expected a list of file names", file=file, field=key)
    return tuple(data)
