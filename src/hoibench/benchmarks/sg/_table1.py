"""Table 1 of the SG paper: its numbers, the released test files' counts, and the helpers that
lay out any split's row next to them; and the section 6.1 comparison drawn from Table 1 (how much
larger the HICO-DET-SG train data are than V-COCO-SG's)."""

from __future__ import annotations

from collections.abc import Sequence

from hoibench.data import HOIDataset

__all__ = [
    "PAPER_SECTION61",
    "PAPER_TABLE1",
    "RELEASED_TEST_COUNTS",
    "paper_row",
    "section61_markdown",
    "section61_ratios",
    "split_table1",
    "table1_markdown",
]

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


#: Section 6.1 of the paper: the HICO-DET-SG train data hold "approximately 5.6 times as many images
#: and 12.6 times as many HOIs" and a "3.4 times higher" variety of combinations than V-COCO-SG's;
#: "more examples for one object-interaction combination" is stated without a number (None).
PAPER_SECTION61: dict[str, float | None] = {"images": 5.6, "triplets": 12.6, "combinations": 3.4,
                                            "triplets_per_combination": None}

_SECTION61_KEYS = ("images", "triplets", "combinations", "triplets_per_combination")


def section61_ratios(hico: dict[str, dict[str, int]], vcoco: dict[str, dict[str, int]]) -> dict[str, float]:
    """HICO-DET-SG train / V-COCO-SG train for images, HOI triplets, combination classes and
    triplets per combination, from two rows in :func:`table1_markdown`'s layout."""
    def train(row: dict[str, dict[str, int]], key: str) -> float:
        return float(row[key]["train"])

    out = {k: train(hico, k) / train(vcoco, k) for k in ("images", "triplets", "combinations")}
    out["triplets_per_combination"] = out["triplets"] / out["combinations"]
    return out


def section61_markdown(rows: Sequence[tuple[str, dict[str, float]]]) -> str:
    """Section 6.1 as a Markdown table: the paper's stated ratios first, then ``rows`` (label ->
    :func:`section61_ratios`)."""
    lines = ["| HICO-DET-SG train / V-COCO-SG train | images | HOI triplets | combinations "
             "| triplets per combination |",
             "| --- | ---: | ---: | ---: | ---: |",
             "| paper section 6.1 (stated) | " + " | ".join(
                 "more (no number)" if PAPER_SECTION61[k] is None else f"{PAPER_SECTION61[k]:.1f}"
                 for k in _SECTION61_KEYS) + " |"]
    for label, r in rows:
        lines.append(f"| {label} | " + " | ".join(f"{r[k]:.2f}" for k in _SECTION61_KEYS) + " |")
    return "\n".join(lines)
