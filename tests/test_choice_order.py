"""The choice order of multiple-choice questions is pinned: answers files record it (``meta.order``)
and prompts are built from it, so a change of hashing, of numpy's ``Generator`` stream or of the
call that draws it must fail here. The expected orders were computed by the implementation that
answers files were first written with (numpy's ``Generator(PCG64(h)).permutation(n)``, then
reimplemented without numpy), before ``choice_order`` moved back to numpy itself."""

from __future__ import annotations

import hashlib
import random

import pytest

from hoibench.data import Choice, MCQuestion, choice_order

# (seed, question id, n, permutation, order)
PINNED = [
    (0, "HICO_test2015_00000001.jpg#s1", 4, 0, (0, 1, 2, 3)),
    (0, "HICO_test2015_00000001.jpg#s2", 4, 0, (0, 2, 3, 1)),
    (0, "HICO_test2015_00000008.jpg#s2", 4, 0, (3, 1, 0, 2)),
    (0, "HICO_test2015_00000008.jpg#s2", 4, 1, (0, 1, 2, 3)),
    (5, "HICO_test2015_00000008.jpg#s2", 4, 3, (2, 1, 3, 0)),
    (-3, "COCO_val2014_000000000042.jpg#QA_2", 5, 2, (4, 2, 0, 1, 3)),
    (2**40 + 7, "x", 26, 0,
     (2, 20, 4, 13, 0, 21, 1, 7, 17, 22, 11, 23, 14, 18, 16, 9, 19, 10, 15, 6, 25, 24, 12, 3, 5, 8)),
    (11, "HICO_test2015_00009146.jpg", 1, 0, (0,)),
    (11, "HICO_test2015_00009146.jpg", 0, 0, ()),
    (123456, "vcoco-ho#7", 9, 15, (0, 1, 3, 4, 7, 5, 6, 2, 8)),
]


@pytest.mark.parametrize(("seed", "qid", "n", "permutation", "order"), PINNED)
def test_known_orders(seed: int, qid: str, n: int, permutation: int, order: tuple[int, ...]) -> None:
    got = choice_order(seed, qid, n, permutation)
    assert got == order
    assert all(type(i) is int for i in got)  # plain ints: they go into JSON and index lists


def test_digest_of_3000_orders() -> None:
    # seeds from -5 to 10**6, permutations 0-7, 0 to 30 choices; the digest of the old orders
    rnd = random.Random(20261206)
    h = hashlib.sha256()
    for _ in range(3000):
        qid = f"HICO_test2015_{rnd.randrange(10**8):08d}.jpg#s{rnd.randrange(1, 4)}"
        seed, perm, n = rnd.randrange(-5, 10**6), rnd.randrange(8), rnd.randint(0, 30)
        h.update(repr((seed, qid, n, perm, choice_order(seed, qid, n, perm))).encode())
    assert h.hexdigest() == "684f4781865f8ab10701dbe23c2adb248976e519b031afcd4c419b3150f58916"


def test_question_shows_its_choices_in_the_pinned_order() -> None:
    q = MCQuestion(id="HICO_test2015_00000008.jpg#s2", file_name="HICO_test2015_00000008.jpg", setting=2,
                   person_box=(1.0, 2.0, 30.0, 40.0),
                   choices=tuple(Choice(t) for t in ("ride bicycle", "hold bicycle", "wash car", "no_interaction dog")),
                   correct=frozenset({0}))
    assert q.order(5, 3) == (2, 1, 3, 0)
    assert [c.text for _, c in q.lettered(5, 3)] == ["wash car", "hold bicycle", "no_interaction dog", "ride bicycle"]
