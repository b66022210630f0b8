"""The one metric base: declared state, ``update``/``compute``/``reset``, cached results.

A metric is a small state machine (torchmetrics' ``Metric``, without tensors or devices):

* ``__init__`` checks and stores the keyword parameters under their own names (sklearn's rule,
  so the repr can name them) and declares every piece of state with :meth:`Metric.add_state`;
* ``update(preds, target)`` (predictions first, ground truth second, for every metric) adds a
  batch to the state;
* ``compute()`` turns the state into a frozen result. The base caches it until the next
  ``update`` or ``reset``, and raises the one :class:`~hoibench.ValidationError` of
  :func:`Metric._check_updated` when no ``update`` came first: an empty metric has no number,
  and returning NaN or zeros would be a silently wrong one;
* ``reset()`` restores every declared state to (a fresh copy of) its default.

Subclasses write plain ``update`` and ``compute`` methods; ``__init_subclass__`` wraps them
(keeping their names, signatures and docstrings) with the cache and the update count, so no
metric re-implements either.
"""

from __future__ import annotations

import copy
import functools
import inspect
from collections.abc import Callable, Mapping, Set
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np

from hoibench._exceptions import ValidationError

__all__ = ["Metric"]

ResultT = TypeVar("ResultT")

_WRAPPED = "__hoibench_metric_wrapped__"
_MAX_VALUE_REPR = 60


class Metric(Generic[ResultT]):
    """Base of every hoibench metric (``HICOMeanAP``, ``VCOCORoleAP``, ``MCQMetrics``).

    Attributes
    ----------
    higher_is_better:
        Whether a larger headline number is better (``None``: not a score).
    update_count:
        ``update`` calls since construction or the last ``reset``.

    Examples
    --------
    >>> class Mean(Metric[float]):
    ...     higher_is_better = None
    ...     def __init__(self, *, scale: float = 1.0) -> None:
    ...         super().__init__()
    ...         self.scale = scale
    ...         self.add_state("_values", [])
    ...     def update(self, preds: list[float], target: None = None) -> None:
    ...         self._values.extend(preds)
    ...     def compute(self) -> float:
    ...         return self.scale * sum(self._values) / len(self._values)
    >>> m = Mean(scale=2.0)
    >>> m.update([1.0, 2.0]); m.compute()
    3.0
    >>> m
    Mean(scale=2.0)
    """

    higher_is_better: ClassVar[bool | None] = None

    def __init__(self) -> None:
        self._defaults: dict[str, Any] = {}
        self._computed: ResultT | None = None
        self.update_count = 0

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, wrap in (("update", _cached_update), ("compute", _cached_compute)):
            fn = cls.__dict__.get(name)
            if fn is not None and not getattr(fn, _WRAPPED, False):
                setattr(cls, name, wrap(fn))

    # ------------------------------------------------------------------ state
    def add_state(self, name: str, default: Any) -> None:
        """Declare a state attribute; :meth:`reset` sets it back to a deep copy of ``default``."""
        if not hasattr(self, "_defaults"):
            raise TypeError(f"{type(self).__name__}.__init__ must call super().__init__() before add_state()")
        if name in self._defaults:
            raise ValueError(f"state {name!r} is declared twice")
        self._defaults[name] = default
        setattr(self, name, copy.deepcopy(default))

    def reset(self) -> None:
        """Forget every update: each declared state back to its default, no cached result."""
        for name, default in self._defaults.items():
            setattr(self, name, copy.deepcopy(default))
        self._computed = None
        self.update_count = 0

    def update(self, preds: Any, target: Any) -> None:
        """Add a batch: predictions first, ground truth second."""
        raise NotImplementedError

    def compute(self) -> ResultT:
        """The result of every batch added since construction or the last :meth:`reset`."""
        raise NotImplementedError

    def _check_updated(self, method: str = "compute") -> None:
        """The one error of every metric asked for a result before it saw any data."""
        if self.update_count == 0:
            raise ValidationError(f"{type(self).__name__}.{method}() called before any update(): "
                                  "there is nothing to score yet")

    # ------------------------------------------------------------------ repr
    def _repr_param(self, name: str) -> Any:
        """The value the repr shows for constructor parameter ``name`` (stored under that name)."""
        return getattr(self, name)

    def __repr__(self) -> str:
        """The class with the parameters that differ from their defaults (sklearn's style)."""
        parts = []
        for name, p in inspect.signature(type(self).__init__).parameters.items():
            if name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or not hasattr(self, name):
                continue
            value = self._repr_param(name)
            if p.default is not p.empty and _same(value, p.default):
                continue
            parts.append(f"{name}={_short_repr(value)}")
        return f"{type(self).__name__}({', '.join(parts)})"


def _cached_update(fn: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(fn)
    def update(self: Metric[Any], *args: Any, **kwargs: Any) -> None:
        self._computed = None  # also when ``fn`` fails half-way: the state may have changed
        fn(self, *args, **kwargs)
        self.update_count += 1

    setattr(update, _WRAPPED, True)
    return update


def _cached_compute(fn: Callable[[Any], ResultT]) -> Callable[[Any], ResultT]:
    @functools.wraps(fn)
    def compute(self: Metric[ResultT]) -> ResultT:
        if self._computed is None:
            self._check_updated("compute")
            self._computed = fn(self)
        return self._computed

    setattr(compute, _WRAPPED, True)
    return compute


class Verbatim(str):
    """A repr fragment shown as is (for :meth:`Metric._repr_param`)."""

    def __repr__(self) -> str:
        return str(self)


def _same(value: Any, default: Any) -> bool:
    if value is default:
        return True
    if default is None and isinstance(value, (Mapping, Set, list, tuple)) and not value:
        return True  # ``None`` stands for "nothing" and is stored as an empty container
    if isinstance(value, np.ndarray) or isinstance(default, np.ndarray):
        return False
    try:
        return bool(value == default)
    except Exception:  # an object without a boolean equality (arrays inside)
        return False


def _short_repr(value: Any) -> str:
    """``repr(value)``, or a summary (type and size) when that would be longer than a few words."""
    text = repr(value)
    if len(text) <= _MAX_VALUE_REPR:
        return text
    if isinstance(value, np.ndarray):
        return f"<array shape={value.shape} dtype={value.dtype}>"
    if isinstance(value, (Mapping, Set, list, tuple)):
        return f"<{type(value).__name__} of {len(value)}>"
    return text[:_MAX_VALUE_REPR - 3] + "..."
