"""Zero-shot class lists written the way other repositories write them, for ``--classes FILE``."""

from __future__ import annotations

import pytest

from hoibench._exceptions import FormatError
from hoibench.formats import read_class_list

# how HOICLIP's datasets/static_hico.py spells UC_HOI_IDX['uc0'] (a Python list over several
# lines, trailing comma, a comment), pasted into a file; the ids here are made up
PYTHON_LIST = """[
    0, 1, 10, 29,   # first row
    30, 41, 599,
]
"""


@pytest.mark.parametrize("name", ["uc0.txt", "uc0.json"])
def test_python_list_literal(tmp_path, name):
    (tmp_path / name).write_text(PYTHON_LIST)
    assert read_class_list(tmp_path / name, n_classes=600).tolist() == [0, 1, 10, 29, 30, 41, 599]


def test_printed_python_list_and_comma_separated_text(tmp_path):
    (tmp_path / "a.txt").write_text(str([5, 3, 3, 8]) + "\n")  # print(UC_HOI_IDX['uc1']) > a.txt
    assert read_class_list(tmp_path / "a.txt").tolist() == [3, 5, 8]
    (tmp_path / "b.txt").write_text("4, 9\n2 # two\n")
    assert read_class_list(tmp_path / "b.txt").tolist() == [2, 4, 9]


@pytest.mark.parametrize("text, match", [
    ("[1, __import__('os').getpid()]", "neither JSON nor a Python list"),
    ("[1, 600]", r"record 1: expected a 0-based HOI class id \(0..599\), got 600"),
    ("[1, 2.5,]", r"record 1: .*got 2.5"),
])
def test_bad_lists_are_named(tmp_path, text, match):
    (tmp_path / "x.txt").write_text(text)
    with pytest.raises(FormatError, match=match):
        read_class_list(tmp_path / "x.txt", n_classes=600)
