"""One rule for random state, as scikit-learn's ``check_random_state``: an int seed, a numpy
``Generator`` (used as is) or ``None`` (fresh entropy)."""

from __future__ import annotations

import numpy as np

from hoibench._exceptions import ConfigError

__all__ = ["RandomState", "check_random_state"]

RandomState = int | np.random.Generator | None


def check_random_state(random_state: int | np.random.Generator | None) -> np.random.Generator:
    """Resolve ``random_state`` (int seed, Generator, or None for fresh entropy) to a Generator."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or (isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool)):
        return np.random.default_rng(random_state)
    raise ConfigError(f"random_state must be an int, a numpy Generator or None; got {random_state!r}")
