"""One rule for random state, as scikit-learn's ``check_random_state``: an int seed, a numpy
``Generator`` (used as is) or ``None`` (fresh entropy); and :func:`pcg64_permutation`, numpy's
seeded permutation without numpy (the choice order of every multiple-choice question)."""

from __future__ import annotations

import importlib
import operator
from typing import Any

import numpy as np

from hoibench._exceptions import ConfigError

__all__ = ["RandomState", "check_random_state", "pcg64_permutation"]

RandomState = int | np.random.Generator | None


def check_random_state(random_state: int | np.random.Generator | None) -> np.random.Generator:
    """Resolve ``random_state`` (int seed, Generator, or None for fresh entropy) to a Generator."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or (isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool)):
        return np.random.default_rng(random_state)
    raise ConfigError(f"random_state must be an int, a numpy Generator or None; got {random_state!r}")


try:  # (by name, as hoibench.formats._scan imports _colscan: the optional C build of the below)
    _NATIVE: Any = importlib.import_module("hoibench._pcg64")
except ImportError:  # no compiler at install time: the pure-Python path
    _NATIVE = None

# numpy's SeedSequence and PCG64 constants (numpy/random/bit_generator.pyx, pcg64.h)
_M32 = 0xFFFFFFFF
_M64 = (1 << 64) - 1
_M128 = (1 << 128) - 1
_PCG_MULTIPLIER = (2549297995355413924 << 64) + 4865540595714422341


def _hash_words(words: list[int]) -> list[int]:
    """``SeedSequence(entropy).generate_state(4, np.uint64)`` for the entropy's 32-bit words:
    numpy's pool mixing and output hashing, in Python integers."""
    h = 0x43B0D7E5
    pool = []
    for i in range(4):
        v = (words[i] if i < len(words) else 0) ^ h
        h = (h * 0x931E8875) & _M32
        v = (v * h) & _M32
        pool.append(v ^ (v >> 16))
    for src, value in [(s, None) for s in range(4)] + [(None, w) for w in words[4:]]:
        for dst in range(4):
            if src == dst:
                continue
            v = (pool[src] if src is not None else value) ^ h  # type: ignore[operator]
            h = (h * 0x931E8875) & _M32
            v = (v * h) & _M32
            v ^= v >> 16
            r = (0xCA01F9DD * pool[dst] - 0x4973F715 * v) & _M32
            pool[dst] = r ^ (r >> 16)
    h = 0x8B51F9DD
    out = []
    for i in range(8):
        v = pool[i & 3] ^ h
        h = (h * 0x58F38DED) & _M32
        v = (v * h) & _M32
        out.append(v ^ (v >> 16))
    return [out[2 * k] | (out[2 * k + 1] << 32) for k in range(4)]


def pcg64_permutation(entropy: int, n: int) -> tuple[int, ...]:
    """``np.random.Generator(np.random.PCG64(entropy)).permutation(n)`` for an entropy
    ``>= 0``, exactly (tested against numpy on thousands of seeds), without numpy.

    Why not numpy: the runner orders every question's choices on its event loop, where numpy's
    seeding (a ``SeedSequence``, a ``PCG64``, a ``Generator``, their error-state context) cost
    45-70 us of CPU per question amid a run; and numpy does not promise that a ``Generator``'s
    streams stay the same across its releases, which this does. It runs in the C extension
    ``hoibench._pcg64`` (~1 us) where that was built, else in :func:`_pcg64_permutation_py`
    (~25 us), the reference: both give the same numbers. ``n < 0`` raises ``ValueError``."""
    if _NATIVE is None:
        return _pcg64_permutation_py(entropy, n)
    entropy = operator.index(entropy)
    if entropy < 0:
        raise ValueError("entropy must be >= 0")
    # the entropy's 32-bit words, least significant first, little-endian; [0] for 0
    nbytes = ((entropy.bit_length() + 31) >> 5 or 1) << 2
    return _NATIVE.permutation(entropy.to_bytes(nbytes, "little"), n)


def _pcg64_permutation_py(entropy: int, n: int) -> tuple[int, ...]:
    """:func:`pcg64_permutation` in plain Python: the reference for the C extension and the path
    where it was not built."""
    if entropy < 0:
        raise ValueError("entropy must be >= 0")
    if n < 0:
        raise ValueError("n must be >= 0")
    words = []
    while entropy:
        words.append(entropy & _M32)
        entropy >>= 32
    s0, s1, i0, i1 = _hash_words(words or [0])
    # pcg_setseq_128_srandom_r: state 0, one step, add the seed, one step
    inc = (((i0 << 64) | i1) << 1 | 1) & _M128
    state = ((inc + ((s0 << 64) | s1)) * _PCG_MULTIPLIER + inc) & _M128
    # Generator.shuffle: Fisher-Yates from the end, random_interval(i) by masked rejection on
    # 32-bit draws (each 64-bit XSL-RR output gives its low half, then its high half)
    order = list(range(n))
    spare = -1
    for i in range(n - 1, 0, -1):
        mask = i
        mask |= mask >> 1
        mask |= mask >> 2
        mask |= mask >> 4
        mask |= mask >> 8
        mask |= mask >> 16
        while True:
            if spare >= 0:
                x, spare = spare, -1
            else:
                state = (state * _PCG_MULTIPLIER + inc) & _M128
                rot = state >> 122
                w = ((state >> 64) ^ state) & _M64
                out = ((w >> rot) | (w << ((-rot) & 63))) & _M64
                x, spare = out & _M32, out >> 32
            j = x & mask
            if j <= i:
                break
        order[i], order[j] = order[j], order[i]
    return tuple(order)
