"""HICO-DET-SG and V-COCO-SG: systematic-generalization splits (``../seeds/000_*``).

A split holds out a set of (object, verb) *combinations*: the test data contain only them, the
train data none of them, so a model is tested on novel combinations of known objects and verbs.

The steps (Algorithm 1 of the paper):

1. SELECT: the distinct combinations of the union of the original train and test sets, sorted by
   (COCO-80 object index, verb id), are split with scikit-learn's
   ``train_test_split(combos, train_size=ratio, random_state=random_state)``. This is exactly how the
   released files were made (HICO-DET-SG seeds 368/680/750, ``ratio`` 0.9; V-COCO-SG seeds
   564/966/2065, ``ratio`` 0.7); only the number of combinations and their order matter.
2. ASSIGN images. ``policy="paper"`` (the paper's text and Algorithm 1): an image goes to train
   when none of its pairs is a test combination, to test when all are, and is dropped when mixed.
   ``policy="released"`` (what the released files contain, made by the repository's older
   generator): every image with at least one test pair goes to test keeping only its test pairs.
3. VERIFY the split; with ``random_state="auto"`` try the next seed until it passes.

Images without any pair are never assigned (the released generator read PPDM/QPIC files, which
list only images with pairs). See ``docs/sg-splits.md`` for the released files' quirks
(split 3's inherited pair deletions, the deleted test entries, the mixed box conventions) and
how :data:`PRESETS` reproduce them.

The package: :mod:`._presets` (the released splits' parameters and deleted test entries),
:mod:`._table1` (the paper's Table 1 and the layout of any split's row), :mod:`._select` (SELECT
and VERIFY), :mod:`._assign` (ASSIGN and the builders), :mod:`._split` (the built split and its
folder), :mod:`._audit` (leakage report of any pair of files) and :mod:`._compare` (a built file
against a released one). The readers of a split folder live in :mod:`hoibench.formats.sg_split`.
"""

from hoibench.benchmarks.sg._assign import build_preset, build_sg_split, load_union
from hoibench.benchmarks.sg._audit import (
    AuditReport,
    BoxConventionGroup,
    audit_split,
    box_convention_groups,
)
from hoibench.benchmarks.sg._compare import SplitComparison, compare_splits
from hoibench.benchmarks.sg._presets import PRESETS, SGPreset, get_preset, load_released_removals
from hoibench.benchmarks.sg._select import select_test_combinations, sg_combinations, verify_split
from hoibench.benchmarks.sg._split import SGSplit
from hoibench.benchmarks.sg._table1 import (
    PAPER_SECTION61,
    PAPER_TABLE1,
    RELEASED_TEST_COUNTS,
    paper_row,
    section61_markdown,
    section61_ratios,
    split_table1,
    table1_markdown,
)

__all__ = [
    "PAPER_SECTION61",
    "PAPER_TABLE1",
    "PRESETS",
    "RELEASED_TEST_COUNTS",
    "AuditReport",
    "BoxConventionGroup",
    "SGPreset",
    "SGSplit",
    "SplitComparison",
    "audit_split",
    "box_convention_groups",
    "build_preset",
    "build_sg_split",
    "compare_splits",
    "get_preset",
    "load_released_removals",
    "load_union",
    "paper_row",
    "section61_markdown",
    "section61_ratios",
    "select_test_combinations",
    "sg_combinations",
    "split_table1",
    "table1_markdown",
    "verify_split",
]
