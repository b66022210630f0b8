"""SELECT and VERIFY of Algorithm 1: the distinct (verb, object) combinations in the released
generator's order, scikit-learn's split of them, and the checks a split must pass."""

from __future__ import annotations

from collections import Counter
from typing import Literal

import numpy as np

from hoibench._exceptions import ConfigError
from hoibench.benchmarks._build import check_seed, renamed_seed
from hoibench.data import HOIDataset
from hoibench.vocab import LabelSpace

__all__ = ["select_test_combinations", "sg_combinations", "verify_split"]

Verify = Literal["paper", "released"]
VERIFY_RULES = ("paper", "released")


# --------------------------------------------------------------------------- SELECT
def _combo_keys(vocab: LabelSpace, verbs: np.ndarray, objects: np.ndarray) -> np.ndarray:
    """One sortable integer per (object, verb): COCO-80 index major, verb minor."""
    return vocab.coco80[objects].astype(np.int64) * (vocab.n_verbs + 1) + verbs


def sg_combinations(ds: HOIDataset) -> np.ndarray:
    """Distinct (verb, object) combinations with an object, in the released generator's order.

    The order is (COCO-80 object index, verb id), the row-major order of the generator's
    object × verb count matrix; returned as an ``(n, 2)`` array of (verb, object) indices.
    """
    has = ds.pair_object_label >= 0
    verbs, objs = ds.pair_verb[has], ds.pair_object_label[has]
    _, first = np.unique(_combo_keys(ds.vocab, verbs, objs), return_index=True)
    return np.stack([verbs[first], objs[first]], axis=1).reshape(-1, 2).astype(np.int64)


def select_test_combinations(combinations: np.ndarray, *, ratio: float, random_state: int | None = None,
                             seed: int | None = None) -> np.ndarray:
    """SELECT: the test rows of ``combinations`` (kept in the order scikit-learn returns them).

    ``train_test_split(combinations, train_size=ratio, random_state=random_state)``, as the
    released generator calls it; ``combinations`` must already be in :func:`sg_combinations`
    order. ``seed`` is the deprecated name of ``random_state``.
    """
    from sklearn.model_selection import train_test_split

    random_state = renamed_seed(random_state, seed, function="select_test_combinations")
    if random_state is None:
        raise ConfigError("select_test_combinations needs random_state (an integer seed)")
    state = check_seed(random_state)
    _check_ratio(ratio)
    if len(combinations) < 2:
        raise ConfigError(f"need at least 2 combinations to split; got {len(combinations)}")
    try:
        _, test = train_test_split(np.asarray(combinations), train_size=ratio, random_state=state)
    except ValueError as exc:  # e.g. a ratio that leaves train or test empty
        raise ConfigError(f"cannot split {len(combinations)} combinations with ratio {ratio}: {exc}") from None
    return np.asarray(test, dtype=np.int64).reshape(-1, 2)


def _check_ratio(ratio: float) -> None:
    if not 0.0 < float(ratio) < 1.0:
        raise ConfigError(f"ratio must be in (0, 1) (the share of combinations kept for train); got {ratio!r}")


# --------------------------------------------------------------------------- VERIFY
def verify_split(
    train_combinations: np.ndarray,
    test_combinations: np.ndarray,
    all_combinations: np.ndarray,
    *,
    vocab: LabelSpace,
    rule: Verify = "paper",
) -> list[str]:
    """Why a split fails VERIFY (empty list: it passes). Combinations are (verb, object) rows.

    ``rule="released"`` (the released generator's ``checker``): the object and the verb of
    every test combination occur among the train combinations. ``rule="paper"`` (Appendix A and
    Algorithm 1, on the train *data*): every object and every verb of the dataset occurs in the
    train data, every object is paired with at least two verbs there, and every verb that the
    dataset pairs with three or more objects is paired with at least two there.

    The last clause relaxes the paper's "every interaction class is paired with multiple object
    classes": HICO-DET pairs 39 verbs with a single object and many with exactly two, so the
    literal rule holds for no split (0 of the first 300 seeds pass it). ``train_combinations``
    are the combinations of the train *images* for ``"paper"`` and the SELECTed train
    combinations for ``"released"``.
    """
    if rule not in VERIFY_RULES:
        raise ConfigError(f"verify must be one of {list(VERIFY_RULES)}; got {rule!r}")
    tr = np.asarray(train_combinations, dtype=np.int64).reshape(-1, 2)
    problems: list[str] = []
    if rule == "released":
        verbs, objs = set(tr[:, 0].tolist()), set(tr[:, 1].tolist())
        for v, o in np.asarray(test_combinations).reshape(-1, 2).tolist():
            if o not in objs:
                problems.append(f"object {vocab.objects[o]!r} of a test combination is in no train combination")
            if v not in verbs:
                problems.append(f"verb {vocab.verbs[v]!r} of a test combination is in no train combination")
        return sorted(set(problems))
    allc = np.asarray(all_combinations, dtype=np.int64).reshape(-1, 2)
    total_verbs_of = Counter(allc[:, 1].tolist())
    total_objs_of = Counter(allc[:, 0].tolist())
    train_verbs_of = Counter(tr[:, 1].tolist())
    train_objs_of = Counter(tr[:, 0].tolist())
    for o, k in sorted(total_verbs_of.items()):
        need = min(2, k)
        if train_verbs_of[o] < need:
            problems.append(f"object {vocab.objects[o]!r} has {train_verbs_of[o]} verb(s) in train, needs {need}")
    for v, k in sorted(total_objs_of.items()):
        need = 1 if k < 3 else 2
        if train_objs_of[v] < need:
            problems.append(f"verb {vocab.verbs[v]!r} has {train_objs_of[v]} object(s) in train, needs {need}")
    return problems


def _observed(ds: HOIDataset, pair_mask: np.ndarray) -> np.ndarray:
    """Distinct (verb, object) combinations of the masked pairs (pairs with an object only)."""
    m = pair_mask & (ds.pair_object_label >= 0)
    vo = np.stack([ds.pair_verb[m], ds.pair_object_label[m]], axis=1)
    return np.unique(vo, axis=0) if len(vo) else np.zeros((0, 2), np.int64)


def _sorted_like(vocab: LabelSpace, combos: np.ndarray) -> np.ndarray:
    order = np.argsort(_combo_keys(vocab, combos[:, 0], combos[:, 1]), kind="stable")
    return combos[order]

