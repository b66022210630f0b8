"""The text conventions every chat-model caller shares (``hoibench.models``): box text in prompts
and yes/no replies. ``parse_yes_no`` replaced two functions that disagreed; the cases of both are
here, and the replies on which they disagreed."""

from __future__ import annotations

import pytest

from hoibench.models import format_box, parse_yes_no


@pytest.mark.parametrize(("reply", "expected"), [
    # the augmentation pipeline's cases (its parser anchored at the start: it won)
    (" Yes, the person is.", True),
    ("no", False),
    ("**No**", False),
    ("Nope", None),
    ("", None),
    (None, None),
    # the question builder's judges' cases
    ("Yes, clearly", True),
    ("no.", False),
    ("maybe", None),
    ("YES", True),
    ('"No" - the person is not riding it.', False),
    ("Yesterday", None),
    ("nobody", None),
])
def test_parse_yes_no_cases_of_both_old_parsers(reply: str | None, expected: bool | None) -> None:
    assert parse_yes_no(reply) is expected


@pytest.mark.parametrize("reply", [
    "I think yes",  # the judges' parser searched anywhere: True
    "There is no cup, so yes.",  # ... and read this one as False
    "The answer is no.",
])
def test_only_the_first_word_counts(reply: str) -> None:
    assert parse_yes_no(reply) is None


def test_format_box_decimals() -> None:
    vals = [523.0, 236.123, 571.5, 343.999]
    # the released CrossHOI code prints a Python list of floats rounded to two decimals
    assert format_box(vals) == str([round(v, 2) for v in vals]) == "[523.0, 236.12, 571.5, 344.0]"
    assert format_box(vals, decimals=1) == "[523.0, 236.1, 571.5, 344.0]"
    # integers: 0–1000 grids and Ferret's pixel boxes (round half to even, like Python's round)
    assert format_box(vals, decimals=0) == "[523, 236, 572, 344]"
    assert format_box((0.5, 1.5, -2.5, 10), decimals=0) == "[0, 2, -2, 10]"
