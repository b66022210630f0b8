"""``pcg64_permutation`` against numpy itself: the choice order of every question must stay
numpy's ``Generator(PCG64(seed)).permutation(n)`` number for number (answers files and prompts
written before it replaced numpy in ``choice_order`` keep their orders)."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import numpy as np
import pytest

import hoibench._random as _random
from hoibench._random import _NATIVE, _pcg64_permutation_py, pcg64_permutation
from hoibench.data import choice_order

_no_native = pytest.mark.skipif(_NATIVE is None, reason="hoibench._pcg64 is not built (no C compiler)")


def _numpy(entropy: int, n: int) -> tuple[int, ...]:
    return tuple(int(i) for i in np.random.Generator(np.random.PCG64(entropy)).permutation(n))


@pytest.fixture(params=["native", "python"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a test through the C extension (where built) and through the pure-Python path."""
    if request.param == "native" and _NATIVE is None:
        pytest.skip("hoibench._pcg64 is not built (no C compiler)")
    if request.param == "python":
        monkeypatch.setattr(_random, "_NATIVE", None)
    return str(request.param)


def test_equals_numpy_on_random_seeds_and_sizes(path: str) -> None:
    rnd = random.Random(20261205)
    bits = [0, 1, 31, 32, 33, 64, 96, 127, 128, 160, 256]  # 1 to 8 words of entropy: pool shorter, equal, longer
    for k in range(3000):
        b = bits[k % len(bits)]
        entropy = rnd.getrandbits(b) if b else 0
        n = rnd.randint(0, 40)
        assert pcg64_permutation(entropy, n) == _numpy(entropy, n), (entropy, n)


def test_rejection_on_ranges_far_from_a_power_of_two(path: str) -> None:
    # n = 2^k + 1 rejects almost half the draws; n up to 1000 uses masks of up to 10 bits
    for entropy in (0, 5, 2**64 + 3, 2**128 - 1):
        for n in (2, 3, 5, 17, 33, 65, 129, 257, 1000):
            assert pcg64_permutation(entropy, n) == _numpy(entropy, n), (entropy, n)


def test_choice_order_is_numpys_permutation_of_the_question_hash(path: str) -> None:
    rnd = random.Random(3)
    for _ in range(500):
        qid = f"HICO_test2015_{rnd.randrange(10**8):08d}.jpg#QA_{rnd.randrange(9)}"
        seed, perm, n = rnd.randrange(-5, 10**6), rnd.randrange(8), rnd.randint(1, 26)
        digest = hashlib.sha256(f"{seed}\x1f{qid}\x1f{perm}".encode()).digest()
        assert choice_order(seed, qid, n, perm) == _numpy(int.from_bytes(digest[:16], "little"), n)


def test_negative_entropy_is_refused(path: str) -> None:
    with pytest.raises(ValueError, match="entropy"):
        pcg64_permutation(-1, 4)


def test_negative_n_is_refused(path: str) -> None:
    with pytest.raises(ValueError, match="n must be >= 0"):
        pcg64_permutation(5, -1)


def test_a_built_extension_is_imported() -> None:
    # an extension that is there but fails to import is a bug, not "no compiler"
    built = [*Path(_random.__file__).parent.glob("_pcg64*.so"), *Path(_random.__file__).parent.glob("_pcg64*.pyd")]
    assert _NATIVE is not None or not built


@_no_native
def test_native_equals_python_and_numpy() -> None:
    rnd = random.Random(77)
    for k in range(4000):
        b = rnd.randint(0, 256)
        entropy = rnd.getrandbits(b) if b else 0
        n = rnd.randint(0, 40)
        native = pcg64_permutation(entropy, n)
        assert native == _pcg64_permutation_py(entropy, n), (entropy, n)
        if k % 4 == 0:  # numpy on a quarter: its seeding dominates the time
            assert native == _numpy(entropy, n), (entropy, n)
    for entropy in (0, 1, 2**32 - 1, 2**32, 2**64 + 3, 2**128 - 1, 2**256 - 1, 3**200):
        for n in [*(2**k + 1 for k in range(10)), 999, 1000]:
            native = pcg64_permutation(entropy, n)
            assert native == _pcg64_permutation_py(entropy, n) == _numpy(entropy, n), (entropy, n)


@_no_native
def test_native_words_are_little_endian_32_bit() -> None:
    entropy = 0x0102030405060708090A0B0C0D0E0F10
    assert _NATIVE.permutation(entropy.to_bytes(16, "little"), 30) == _numpy(entropy, 30)
    # a zero entropy is one zero word; zero words up to the pool's four are its padding, while a
    # fifth is mixed in (numpy's SeedSequence of five zero words)
    assert _NATIVE.permutation(bytes(4), 12) == _NATIVE.permutation(bytes(16), 12) == _numpy(0, 12)
    five = np.random.Generator(np.random.PCG64(np.random.SeedSequence([0] * 5))).permutation(12)
    assert _NATIVE.permutation(bytes(20), 12) == tuple(int(i) for i in five) != _numpy(0, 12)


@_no_native
def test_native_argument_errors() -> None:
    perm = _NATIVE.permutation
    with pytest.raises(TypeError, match="words must be bytes"):
        perm(bytearray(4), 3)
    with pytest.raises(TypeError, match="words must be bytes"):
        perm(5, 3)
    with pytest.raises(ValueError, match="multiple of 4"):
        perm(b"", 3)
    with pytest.raises(ValueError, match="multiple of 4"):
        perm(b"abcde", 3)
    with pytest.raises(TypeError, match="n must be an int"):
        perm(bytes(4), 3.0)
    with pytest.raises(TypeError, match="n must be an int"):
        perm(bytes(4), "3")
    with pytest.raises(ValueError, match="n must be >= 0"):
        perm(bytes(4), -1)
    with pytest.raises(ValueError, match="n must be >= 0"):
        perm(bytes(4), -(2**70))
    with pytest.raises(ValueError, match=r"n must be <= 2\*\*31-1"):
        perm(bytes(4), 2**31)
    with pytest.raises(ValueError, match=r"n must be <= 2\*\*31-1"):
        perm(bytes(4), 2**70)
    with pytest.raises(TypeError, match="exactly 2 arguments"):
        perm(bytes(4))
    with pytest.raises(TypeError, match="exactly 2 arguments"):
        perm(bytes(4), 3, 4)
    assert perm(bytes(4), np.int64(5)) == _numpy(0, 5)  # any __index__ int, as range() takes
    assert perm(bytes(4), 0) == () and perm(bytes(4), 1) == (0,)
