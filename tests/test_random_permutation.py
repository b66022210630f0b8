"""``pcg64_permutation`` against numpy itself: the choice order of every question must stay
numpy's ``Generator(PCG64(seed)).permutation(n)`` number for number (answers files and prompts
written before it replaced numpy in ``choice_order`` keep their orders)."""

from __future__ import annotations

import hashlib
import random

import numpy as np
import pytest

from hoibench._random import pcg64_permutation
from hoibench.data import choice_order


def _numpy(entropy: int, n: int) -> tuple[int, ...]:
    return tuple(int(i) for i in np.random.Generator(np.random.PCG64(entropy)).permutation(n))


def test_equals_numpy_on_random_seeds_and_sizes() -> None:
    rnd = random.Random(20261205)
    bits = [0, 1, 31, 32, 33, 64, 96, 127, 128, 160, 256]  # 1 to 8 words of entropy: pool shorter, equal, longer
    for k in range(3000):
        b = bits[k % len(bits)]
        entropy = rnd.getrandbits(b) if b else 0
        n = rnd.randint(0, 40)
        assert pcg64_permutation(entropy, n) == _numpy(entropy, n), (entropy, n)


def test_rejection_on_ranges_far_from_a_power_of_two() -> None:
    # n = 2^k + 1 rejects almost half the draws; n up to 1000 uses masks of up to 10 bits
    for entropy in (0, 5, 2**64 + 3, 2**128 - 1):
        for n in (2, 3, 5, 17, 33, 65, 129, 257, 1000):
            assert pcg64_permutation(entropy, n) == _numpy(entropy, n), (entropy, n)


def test_choice_order_is_numpys_permutation_of_the_question_hash() -> None:
    rnd = random.Random(3)
    for _ in range(500):
        qid = f"HICO_test2015_{rnd.randrange(10**8):08d}.jpg#QA_{rnd.randrange(9)}"
        seed, perm, n = rnd.randrange(-5, 10**6), rnd.randrange(8), rnd.randint(1, 26)
        digest = hashlib.sha256(f"{seed}\x1f{qid}\x1f{perm}".encode()).digest()
        assert choice_order(seed, qid, n, perm) == _numpy(int.from_bytes(digest[:16], "little"), n)


def test_negative_entropy_is_refused() -> None:
    with pytest.raises(ValueError, match="entropy"):
        pcg64_permutation(-1, 4)
