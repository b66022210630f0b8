"""Bundled datasets by name, and one resolver for "a dataset name or a file" arguments.

Names: ``hico-det`` (train + test), ``hico-det:train``, ``hico-det:test``, ``v-coco``
(trainval + test), ``v-coco:trainval``, ``v-coco:test``. Anything else is read as a file with
:func:`hoibench.formats.read_dataset`.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import os
from importlib import resources
from pathlib import Path

from hoibench._exceptions import ConfigError, FormatError
from hoibench._io import file_sha256
from hoibench.data import HOIDataset
from hoibench.formats import read_dataset, read_hicodet, read_vcoco

__all__ = [
    "BUNDLED",
    "bundled_path",
    "ground_truth_id",
    "is_dataset_name",
    "list_datasets",
    "load_dataset",
    "parse_dataset_name",
    "resolve_dataset",
]

#: dataset name → {split: bundled file}
BUNDLED: dict[str, dict[str, str]] = {
    "hico-det": {"train": "hico_det_train2015.json.gz", "test": "hico_det_test2015.json.gz"},
    "v-coco": {"trainval": "vcoco_trainval.json.gz", "test": "vcoco_test.json.gz"},
}
_ALIASES = {"hicodet": "hico-det", "hico": "hico-det", "vcoco": "v-coco"}


def list_datasets() -> list[str]:
    """Every name :func:`load_dataset` accepts."""
    return [n for name, splits in BUNDLED.items() for n in [name, *(f"{name}:{s}" for s in splits)]]


def bundled_path(name: str, split: str) -> Path:
    """Path of a bundled file inside the installed package."""
    return Path(str(resources.files("hoibench._bundled").joinpath(BUNDLED[name][split])))


def parse_dataset_name(spec: str) -> tuple[str, str | None]:
    """``(dataset, split or None)`` of a bundled name, aliases resolved (``"HICO:test"`` ->
    ``("hico-det", "test")``); an unknown name or split is a :class:`ConfigError` listing the names."""
    name, _, split = spec.lower().partition(":")
    name = _ALIASES.get(name, name)
    if name not in BUNDLED:
        close = difflib.get_close_matches(spec, list_datasets(), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"dataset must be one of {list_datasets()} or a file; got {spec!r}.{hint}")
    if split and split not in BUNDLED[name]:
        raise ConfigError(f"{name} has splits {sorted(BUNDLED[name])}; got {split!r}")
    return name, split or None


def ground_truth_id(spec: str | os.PathLike[str], *more: str | os.PathLike[str]) -> str:
    """What a result was scored on, so that two results under one benchmark name can be told
    apart: ``sha256:<hex>`` of an annotation file's bytes (of several files' digests in order,
    e.g. V-COCO's annotations and COCO instances), or ``dataset:<name>[:<split>]`` for a bundled
    dataset, aliases resolved (fixed by the installed version). Anything else — a missing
    path, a folder, a misspelt name — is an error, never an id that only looks like one."""
    specs = [spec, *more]
    ids = []
    for s in specs:
        path = Path(s)
        if path.is_file():
            ids.append(file_sha256(path))
        elif is_dataset_name(str(s)):
            name, split = parse_dataset_name(str(s))
            ids.append(f"dataset:{name}" + (f":{split}" if split else ""))
        else:
            what = "a folder" if path.is_dir() else "no such file"
            raise FormatError(f"{what}, nor a bundled dataset ({', '.join(list_datasets())}): "
                              "cannot name the ground truth", file=s)
    if len(ids) == 1:
        return ids[0] if ids[0].startswith("dataset:") else f"sha256:{ids[0]}"
    return "sha256:" + hashlib.sha256("\n".join(ids).encode()).hexdigest()


@functools.lru_cache(maxsize=8)
def _load_split(name: str, split: str) -> HOIDataset:
    path = bundled_path(name, split)
    reader = read_hicodet if name == "hico-det" else read_vcoco
    ds = reader(path)
    ds.name = f"{name}:{split}"
    return ds


def load_dataset(spec: str, split: str | None = None) -> HOIDataset:
    """A bundled dataset: ``load_dataset("hico-det", "test")`` or ``load_dataset("hico-det:test")``.

    Without a split, the splits are concatenated in their listed order (train/trainval first).
    Loads are cached per process; datasets are immutable, so sharing them is safe.
    """
    name, parsed = parse_dataset_name(spec)
    split = split or parsed
    if split is not None:
        if split not in BUNDLED[name]:
            raise ConfigError(f"{name} has splits {sorted(BUNDLED[name])}; got {split!r}")
        return _load_split(name, split)
    return HOIDataset.concat([_load_split(name, s) for s in BUNDLED[name]], name=name)


def is_dataset_name(spec: str | os.PathLike[str]) -> bool:
    """Whether ``spec`` names a bundled dataset rather than a file (an existing file of that
    name wins, so ``./hico-det`` can still be read)."""
    if not isinstance(spec, str) or Path(spec).exists():
        return False
    try:
        parse_dataset_name(spec)
    except ConfigError:
        return False
    return True


def resolve_dataset(spec: str | os.PathLike[str], **read_kwargs: object) -> HOIDataset:
    """A bundled dataset by name, or an annotation file read with format detection.

    A spec that is neither an existing file nor a bundled name is an error listing the names
    (a misspelt split such as ``hico-det:val`` gets the dataset's splits).
    """


    if is_dataset_name(spec):
        return load_dataset(str(spec))
    if isinstance(spec, str) and not Path(spec).exists():
        if _ALIASES.get(spec.lower().partition(":")[0], spec.lower().partition(":")[0]) in BUNDLED:
            parse_dataset_name(spec)  # raises: the dataset exists, the split does not
        raise FormatError(f"no such file, nor a bundled dataset ({', '.join(list_datasets())})", file=spec)
    return read_dataset(spec, **read_kwargs)  # type: ignore[arg-type]
