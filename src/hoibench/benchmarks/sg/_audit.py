"""Leakage audit of any train/test pair: shared combinations and images, objects or verbs only in
test, per-combination counts, and the box conventions of each part (``hoibench split audit``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from hoibench._exceptions import ConfigError
from hoibench.benchmarks.sg._table1 import split_table1
from hoibench.data import HOIDataset
from hoibench.formats import BoxConventionGroup, box_convention_groups

__all__ = ["AuditReport", "BoxConventionGroup", "audit_split", "box_convention_groups"]


@dataclass(frozen=True)
class AuditReport:
    """Leakage report of a train/test pair (:func:`audit_split`)."""

    train_name: str
    test_name: str
    table1: dict[str, dict[str, int]]
    shared_combinations: list[dict[str, Any]]
    shared_images: list[str]
    objects_only_in_test: list[str]
    verbs_only_in_test: list[str]
    per_combination: list[dict[str, Any]]
    box_groups: dict[str, list[BoxConventionGroup]]

    def __repr__(self) -> str:
        return (f"AuditReport(train={self.train_name!r}, test={self.test_name!r}, leaks={self.leaks}, "
                f"shared_combinations={len(self.shared_combinations)}, shared_images={len(self.shared_images)}, "
                f"combinations={len(self.per_combination)})")

    @property
    def leaks(self) -> bool:
        """True when a combination occurs in both train and test (the split is not an SG split)."""
        return bool(self.shared_combinations)

    @property
    def box_conventions_mixed(self) -> dict[str, bool]:
        out = {}
        for part, groups in self.box_groups.items():
            known = {g.convention for g in groups if g.convention != "unknown"}
            out[part] = len(known) > 1
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": "sg_audit",
            "train": self.train_name,
            "test": self.test_name,
            "leaks": self.leaks,
            "table1": self.table1,
            "shared_combinations": self.shared_combinations,
            "shared_images": self.shared_images,
            "objects_only_in_test": self.objects_only_in_test,
            "verbs_only_in_test": self.verbs_only_in_test,
            "box_conventions": {k: [g.as_dict() for g in v] for k, v in self.box_groups.items()},
            "box_conventions_mixed": self.box_conventions_mixed,
            "per_combination": self.per_combination,
        }


def audit_split(train: HOIDataset, test: HOIDataset) -> AuditReport:
    """Leakage report for any train/test pair: shared combinations and images, objects or verbs
    only in test, per-combination counts, and the box conventions of each part."""
    if train.vocab.name != test.vocab.name:
        raise ConfigError(f"train is {train.vocab.name}, test is {test.vocab.name}: cannot audit across label spaces")
    vocab = train.vocab

    def counts(ds: HOIDataset) -> Counter[tuple[int, int]]:
        has = ds.pair_object_label >= 0
        return Counter(zip(ds.pair_verb[has].tolist(), ds.pair_object_label[has].tolist()))

    ctr, cte = counts(train), counts(test)
    per = []
    for v, o in sorted(set(ctr) | set(cte), key=lambda c: (int(vocab.coco80[c[1]]), c[0])):
        per.append({"verb": vocab.verbs[v], "object": vocab.objects[o], "verb_index": v,
                    "object_index": o, "train": ctr.get((v, o), 0), "test": cte.get((v, o), 0)})
    shared = [r for r in per if r["train"] and r["test"]]
    tr_obj = set(train.pair_object_label[train.pair_object_label >= 0].tolist())
    te_obj = set(test.pair_object_label[test.pair_object_label >= 0].tolist())
    tr_verb, te_verb = set(train.pair_verb.tolist()), set(test.pair_verb.tolist())
    return AuditReport(
        train_name=train.name,
        test_name=test.name,
        table1=split_table1(train, test),
        shared_combinations=shared,
        shared_images=sorted(set(train.file_names) & set(test.file_names)),
        objects_only_in_test=[vocab.objects[o] for o in sorted(te_obj - tr_obj)],
        verbs_only_in_test=[vocab.verbs[v] for v in sorted(te_verb - tr_verb)],
        per_combination=per,
        box_groups={"train": box_convention_groups(train), "test": box_convention_groups(test)},
    )

