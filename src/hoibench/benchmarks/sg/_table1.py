"""Table 1 of the SG paper: its numbers, the released test files' counts, and the helpers that
lay out any split's row next to them."""

from __future__ import annotations

from collections.abc import Sequence

from hoibench.data import HOIDataset

__all__ = ["PAPER_TABLE1", "RELEASED_TEST_COUNTS", "paper_row", "split_table1", "table1_markdown"]

#: Table 1 of the paper (``000_*.txt``): images, HOI triplets and combination classes.
PAPER_TABLE1: dict[str, dict[str, tuple[int, int]]] = {
    "hico-det": {"images": (38118, 9061), "triplets": (117871, 33405), "combinations": (600, 600)},
    "hico-det-sg1": {"images": (38312, 8515), "triplets": (119331, 14475), "combinations": (540, 60)},
    "hico-det-sg2": {"images": (39213, 7656), "triplets": (122299, 14811), "combinations": (540, 60)},
    "hico-det-sg3": {"images": (40672, 6229), "triplets": (120096, 8994), "combinations": (540, 60)},
    "v-coco": {"images": (5400, 4946), "triplets": (14153, 12649), "combinations": (228, 228)},
    "v-coco-sg1": {"images": (7297, 2850), "triplets": (18214, 3872), "combinations": (160, 68)},
    "v-coco-sg2": {"images": (7057, 3066), "triplets": (15644, 4322), "combinations": (160, 68)},
    "v-coco-sg3": {"images": (6210, 3888), "triplets": (10951, 6244), "combinations": (160, 68)},
}

#: Counts measured on the released test files (FujitsuResearch/hoi_sg, HEAD): images, triplets,
#: distinct (object, verb) combinations with an object. They equal the paper's Table 1 test column.
RELEASED_TEST_COUNTS: dict[str, dict[str, int]] = {
    "hico-det-sg1": {"images": 8515, "triplets": 14475, "combinations": 60},
    "hico-det-sg2": {"images": 7656, "triplets": 14811, "combinations": 60},
    "hico-det-sg3": {"images": 6229, "triplets": 8994, "combinations": 60},
    "v-coco-sg1": {"images": 2850, "triplets": 3872, "combinations": 60},
    "v-coco-sg2": {"images": 3066, "triplets": 4322, "combinations": 58},
    "v-coco-sg3": {"images": 3888, "triplets": 6244, "combinations": 66},
}


def split_table1(ds_train: HOIDataset, ds_test: HOIDataset) -> dict[str, dict[str, int]]:
    """Table 1 counts of any train/test pair (combinations as observed in the files)."""
    return {
        "images": {"train": ds_train.n_images, "test": ds_test.n_images},
        "triplets": {"train": ds_train.n_pairs, "test": ds_test.n_pairs},
        "combinations": {"train": len(ds_train.combinations()), "test": len(ds_test.combinations())},
    }


def table1_markdown(rows: Sequence[tuple[str, dict[str, dict[str, int]]]]) -> str:
    """A Markdown table in the paper's Table 1 layout."""
    lines = [
        "| data split | images train | images test | triplets train | triplets test "
        "| comb. train | comb. test |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for label, t in rows:
        cells = [f"{t[k][s]:,}" if isinstance(t.get(k, {}).get(s), int) else "–"
                 for k in ("images", "triplets", "combinations") for s in ("train", "test")]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def paper_row(name: str) -> dict[str, dict[str, int]]:
    """A row of the paper's Table 1 in :func:`table1_markdown`'s layout."""
    return {k: {"train": v[0], "test": v[1]} for k, v in PAPER_TABLE1[name].items()}
