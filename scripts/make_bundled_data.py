"""Regenerate ``src/hoibench/_bundled/`` from the real annotation files in SHARED_DATA_DIR.

    python scripts/make_bundled_data.py [SHARED_DATA_DIR]   # default ../shared/data

HICO-DET train: HAKE's instance-level JSON (MIT) converted to the hicodet toolkit layout (the
pairs, boxes and sizes; HAKE's part-state labels are not shipped). HICO-DET test: the hicodet
toolkit's ``instances_test2015.json`` (MIT) as it is. V-COCO: the vcoco toolkit's
``instances_vcoco_{trainval,test}.json`` (MIT) as they are. All gzip-compressed with mtime 0 so
the output is byte-identical on every run; ``tests/test_bundled.py`` checks it against the sources.
"""

from __future__ import annotations

import sys
from pathlib import Path

from hoibench._io import atomic_write_bytes, atomic_write_json
from hoibench.formats import read_hake
from hoibench.formats.hicodet import to_hicodet_dict

OUT = Path(__file__).resolve().parents[1] / "src" / "hoibench" / "_bundled"


def _gzip(src: Path, dst: Path) -> None:
    atomic_write_bytes(dst, src.read_bytes())  # a .gz target is compressed with mtime 0


def main(shared: str = "../shared/data") -> None:
    root = Path(shared)
    train = read_hake(root / "hico-det/hake/hico-det-instance-level.tar.gz")
    atomic_write_json(OUT / "hico_det_train2015.json.gz", to_hicodet_dict(train))
    _gzip(root / "hico-det/instances_test2015.json", OUT / "hico_det_test2015.json.gz")
    for split in ("trainval", "test"):
        _gzip(root / f"v-coco/instances_vcoco_{split}.json", OUT / f"vcoco_{split}.json.gz")
    print(f"wrote {sorted(p.name for p in OUT.glob('*.gz'))} to {OUT}")


if __name__ == "__main__":
    main(*sys.argv[1:])
