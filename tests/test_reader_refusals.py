"""Readers refuse what no format can hold, with one line naming the file, from every entry point:
JSON nested too deeply (never an internal RecursionError), a file that cannot be JSON (refused from
its first bytes, not after reading a gigabyte), an annotation file with no images, question choices
whose classes are not in the label space, and V-COCO detections whose numbers are strings.

Every file is built here; the CLI cases run ``hoibench`` in this process (``one_line_error``), the
gigabyte ones in a child process whose peak memory is measured.
"""

from __future__ import annotations

import copy
import json
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hoibench._exceptions import FormatError
from hoibench._io import read_json
from hoibench.formats import (
    load_predictions,
    read_answers,
    read_class_list,
    read_dataset,
    read_questions,
    read_vcoco_detections,
    write_predictions,
    write_vcoco_detections,
    write_vsrl_detections,
)
from hoibench.results import read_results
from tests.conftest import FIXTURES, one_line_error

GT = FIXTURES / "mini_instances_test2015.json"
VCOCO = FIXTURES / "mini_instances_vcoco_test.json"


def _deep(n: int) -> str:
    return "[" * n + "]" * n


def _with_deep_value(obj: Any, put: Any, n: int) -> str:
    """``obj`` as JSON text, with a list nested ``n`` deep where ``put(obj)`` left ``"@@"``."""
    obj = copy.deepcopy(obj)
    put(obj)
    return json.dumps(obj).replace('"@@"', _deep(n), 1)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Valid files of each kind: HICO-DET predictions, questions, answers, V-COCO detections."""
    from hoibench.benchmarks.mcq import answers_from_detections, build_mcq_benchmark
    from hoibench.formats import write_answers
    from tests.test_cli_bad_input import _perfect_predictions
    from tests.test_eval_vcoco_oracle import make_synthetic

    d = tmp_path_factory.mktemp("refusals")
    gt = read_dataset(GT)
    preds = _perfect_predictions(gt)
    write_predictions(preds, d / "pred.json")
    build = build_mcq_benchmark(gt, random_state=0, remove_easy=False)
    build.write(d / "q.jsonl")
    write_answers(d / "ans.jsonl", answers_from_detections(list(build.questions), preds),
                  header={"kind": "mcq_answers"})
    _, _, det = make_synthetic(11, n_images=6)
    det = det.subset(np.argsort(det.image_ids, kind="stable"))
    write_vcoco_detections(det, d / "vdet.json")
    write_vcoco_detections(det, d / "vdet_dense.json", share_role_boxes=False)
    write_vsrl_detections(det, d / "vsrl.pkl")
    return {"dir": d, "pred": d / "pred.json", "q": d / "q.jsonl", "ans": d / "ans.jsonl",
            "vdet": d / "vdet.json", "vdet_dense": d / "vdet_dense.json", "vsrl": d / "vsrl.pkl"}


# ------------------------------------------------------------------------------ deep nesting
@pytest.mark.parametrize("depth", [5000, 1020])  # past orjson's 1,024 levels, and within them
def test_deep_values_in_valid_files_are_refused_by_every_reader(base: dict[str, Path], tmp_path: Path,
                                                                depth: int) -> None:
    """A deeply nested value inside an otherwise valid file: past the parser's limit, or within it
    but past Python's recursion limit (an error message's ``repr`` of it overflowed)."""
    pred = json.loads(base["pred"].read_text())
    vdet = json.loads(base["vdet"].read_text())
    qlines = base["q"].read_text().splitlines()
    alines = base["ans"].read_text().splitlines()
    cases = {
        "pred.json": (_with_deep_value(pred, lambda o: o["images"][0]["boxes_h"].__setitem__(0, "@@"), depth),
                      load_predictions),
        "vdet.json": (_with_deep_value(vdet, lambda o: o["images"][0]["person_boxes"].__setitem__(0, "@@"), depth),
                      read_vcoco_detections),
        "q.jsonl": ("\n".join([qlines[0], _with_deep_value(json.loads(qlines[1]),
                                                            lambda o: o.__setitem__("person_box", "@@"), depth),
                               *qlines[2:]]) + "\n", read_questions),
        "ans.jsonl": ("\n".join([alines[0], _with_deep_value(json.loads(alines[1]),
                                                              lambda o: o.__setitem__("selected", "@@"), depth),
                                 *alines[2:]]) + "\n", lambda p: read_answers(p, questions=read_questions(base["q"]))),
        "gt.json": (_with_deep_value(json.loads(GT.read_text()),
                                     lambda o: o["annotation"][0]["boxes_h"].__setitem__(0, "@@"), depth),
                    read_dataset),
        "classes.json": (f"[1, {_deep(depth)}]", lambda p: read_class_list(p, n_classes=600)),
        "result.json": (json.dumps({"kind": "hico_map", "model": "@@"}).replace('"@@"', _deep(depth)),
                        read_results),
    }
    for name, (text, reader) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        try:
            reader(path)
        except FormatError as exc:
            assert str(exc).startswith(str(path)), str(exc)[:300]
            assert "\n" not in str(exc) and len(str(exc)) < 400, str(exc)[:300]
        except RecursionError:
            pytest.fail(f"{name}: RecursionError from a value nested {depth} deep")
        else:
            pytest.fail(f"{name}: a value nested {depth} deep was accepted")


def test_a_document_nested_past_the_parser_limit_names_file_and_place(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text(_deep(5000))
    with pytest.raises(FormatError, match=r"deep\.json: nested too deeply .* at line 1 column 1026"):
        read_json(path)
    # NaN makes orjson fail first; Python's json then recursed into a RecursionError
    path.write_text("[NaN, " + _deep(5000) + "]")
    with pytest.raises(FormatError, match=r"deep\.json: nested too deeply"):
        read_json(path)


@pytest.mark.parametrize("argv", [
    ["eval", "hico", "--gt", str(GT), "--pred", "{f}"],
    ["eval", "vcoco", "--gt", str(VCOCO), "--pred", "{f}"],
    ["data", "info", "{f}"],
    ["data", "validate", "{f}"],
    ["analyze", "class-ap", "{f}"],
    ["report", "{f}", "--out", "{d}/rep"],
    ["mcq", "stats", "{f}"],
], ids=["eval-hico", "eval-vcoco", "data-info", "data-validate", "analyze-class-ap", "report", "mcq-stats"])
def test_deep_document_one_line_from_every_command(tmp_path: Path, argv: list[str],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "deep.json"
    path.write_text(_deep(5000))
    args = [a.replace("{f}", str(path)).replace("{d}", str(tmp_path)) for a in argv]
    if args[:2] == ["data", "validate"]:  # validate prints the problem as it is (exit 2: unreadable)
        from hoibench.cli import main

        with pytest.raises(SystemExit) as exc:
            main(args)
        err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
        assert exc.value.code == 2 and len(err) == 1 and "deep.json" in err[0] and "nested" in err[0], err
        return
    line = one_line_error(args, capsys)
    assert "deep.json" in line and "internal error" not in line, line


# ------------------------------------------------------------------------------ not JSON at all
def test_check_json_start(tmp_path: Path) -> None:
    import gzip

    from hoibench._io import check_json_start

    ok = {"a.json": b'  \n {"x": 1}', "b.json": b"[1]", "c.json": b"null", "d.json": b"", "e.json": b"   ",
          "bom.json": "\ufeff{}".encode(), "utf16.json": "[1]".encode("utf-16-le"),
          "z.json.gz": gzip.compress(b'{"x": 1}')}
    bad = {"nul.json": b"\x00" * 100, "png.json": b"\x89PNG\r\n", "text.json": b"hello",
           "nul.json.gz": gzip.compress(b"\x00" * 1000), "late.json": b" " * 100_000 + b"<html>"}
    for name, data in {**ok, **bad}.items():
        (tmp_path / name).write_bytes(data)
    for name in ok:
        assert check_json_start(tmp_path / name) == tmp_path / name
    for name in bad:
        with pytest.raises(FormatError, match=rf"{name}: not valid JSON: character \d+ is"):
            check_json_start(tmp_path / name)
    assert check_json_start(tmp_path / "png.json", also=b"\x89")  # a binary format's magic byte


#: runs ``hoibench`` and writes its own peak memory (``VmHWM``, KiB) to argv[1] at exit. Not the
#: ``ru_maxrss`` of ``wait4``: Linux carries the pre-exec high-water mark into it, which is the
#: forking test process's (over a gigabyte late in a full test run), not the child's
_MEASURED_MAIN = """import sys
from hoibench.cli import main
try:
    main(sys.argv[2:])
finally:
    with open('/proc/self/status') as st:
        hwm = next(line.split()[1] for line in st if line.startswith('VmHWM'))
    with open(sys.argv[1], 'w') as out:
        out.write(hwm)
"""


def _refusal(argv: list[str], cwd: Path) -> tuple[int, str, float, int]:
    """Run ``hoibench argv`` in a child: exit code, stderr, seconds, peak memory in KiB."""
    peak = cwd / "peak-kib.txt"
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.run([sys.executable, "-c", _MEASURED_MAIN, str(peak), *argv],
                               stdout=subprocess.DEVNULL, stderr=err, cwd=cwd, check=False)
        seconds = time.perf_counter() - start
        err.seek(0)
        return child.returncode, err.read().decode(), seconds, int(peak.read_text())


@pytest.mark.parametrize("argv", [
    ["eval", "hico", "--gt", str(GT), "--pred", "{f}"],
    ["eval", "vcoco", "--gt", str(VCOCO), "--pred", "{f}"],
    ["data", "info", "{f}"],
    ["eval", "hico", "--gt", "{f}", "--pred", "{pred}"],
    ["mcq", "stats", "{f}"],
    ["mcq", "score", "--questions", "{q}", "--answers", "{f}"],
    ["report", "{f}", "--out", "{d}/rep"],
    ["eval", "hico", "--gt", str(GT), "--pred", "{pred}", "--classes", "{f}"],
], ids=["eval-hico-pred", "eval-vcoco-pred", "data-info", "eval-hico-gt", "mcq-stats", "mcq-score-answers",
        "report", "eval-hico-classes"])
def test_a_gigabyte_of_nul_bytes_is_refused_from_its_first_bytes(base: dict[str, Path], tmp_path: Path,
                                                                  argv: list[str]) -> None:
    path = tmp_path / "zeros.json"
    with open(path, "wb") as fh:
        fh.truncate(1 << 30)  # a hole: 1 GiB of NUL bytes that takes no disk
    args = [a.replace("{f}", str(path)).replace("{pred}", str(base["pred"])).replace("{q}", str(base["q"]))
            .replace("{d}", str(tmp_path)) for a in argv]
    rc, err, seconds, peak_kib = _refusal(args, tmp_path)
    # reading it whole took 3.5 GB and seconds; the interpreter and hoibench's imports take ~60 MB
    assert peak_kib < 400_000, f"peak {peak_kib / 1024:.0f} MiB"
    assert seconds < 10, f"{seconds:.1f} s"
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc != 0 and len(lines) == 1 and lines[0].startswith("error: "), err[-500:]
    assert "zeros.json" in lines[0] and "'\\x00'" in lines[0], lines[0]


# ------------------------------------------------------------------------------ silent results
def test_an_empty_annotation_file_holds_no_images(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for text in ("[]", "{}", json.dumps({"annotation": [], "filenames": [], "size": []})):
        path = tmp_path / "empty.json"
        path.write_text(text)
        with pytest.raises(FormatError, match=r"empty\.json: holds no images"):
            read_dataset(path)
    path.write_text("[]")
    with pytest.raises(FormatError, match=r"empty\.json: holds no images"):
        read_dataset(path, format="ppdm")
    # eval blamed the predictions (which were fine); validate said "OK (0 images, 0 pairs)"
    pred = tmp_path / "pred.json"
    write_predictions(_one_detection(), pred)
    line = one_line_error(["eval", "hico", "--gt", str(path), "--pred", str(pred)], capsys)
    assert "empty.json: holds no images" in line, line
    from hoibench.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["data", "validate", str(path)])
    out = capsys.readouterr()
    assert exc.value.code == 1 and "OK" not in out.out and "holds no images" in out.err, out


def _one_detection() -> Any:
    from hoibench.data import HOIPredictions
    from hoibench.vocab import hico_det

    box = np.array([[0.0, 0.0, 10.0, 10.0]])
    return HOIPredictions.from_arrays(hico_det(), ["a.jpg"], np.array([1]), box, box, np.array([1]),
                                      np.array([0]), np.array([0.5]))


@pytest.mark.parametrize(("edit", "field", "problem"), [
    (lambda c: c.__setitem__("hoi", 999), "hoi", "999 is not a hoi class (0..599 in hico-det"),
    (lambda c: c.__setitem__("verb", 117), "verb", "117 is not a verb class (0..116"),
    (lambda c: c.__setitem__("object", -2), "object", "-2 is not a object class"),
    (lambda c: c.__setitem__("verb", (c["verb"] + 1) % 117), "hoi", "not verb"),
])
def test_question_classes_outside_the_label_space_are_refused(base: dict[str, Path], tmp_path: Path,
                                                              edit: Any, field: str, problem: str,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """``mcq stats`` left a class-999 choice out of every count; score, run and from-detections
    took it."""
    lines = base["q"].read_text().splitlines()
    k, q = next((k, json.loads(ln)) for k, ln in enumerate(lines[1:], 1) if json.loads(ln)["choices"][0]["hoi"] >= 0)
    edit(q["choices"][0])
    lines[k] = json.dumps(q)
    path = tmp_path / "q_bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(FormatError) as exc:
        read_questions(path)
    assert str(exc.value).startswith(f"{path}: record {k + 1}: choices[0].{field}: "), str(exc.value)
    assert problem in str(exc.value), str(exc.value)
    for argv in (["mcq", "stats", str(path)],
                 ["mcq", "score", "--questions", str(path), "--answers", str(base["ans"])],
                 ["mcq", "from-detections", "--questions", str(path), "--predictions", str(base["pred"]),
                  "--out", str(tmp_path / "a.jsonl")]):
        assert f"choices[0].{field}" in one_line_error(argv, capsys)


def test_question_classes_of_a_label_space_hoibench_lacks_are_kept(base: dict[str, Path], tmp_path: Path) -> None:
    lines = base["q"].read_text().splitlines()
    q = json.loads(lines[1])
    q["label_space"] = "swig-hoi"
    q["choices"][0].update(hoi=5000, verb=900, object=900)
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join([lines[0], json.dumps(q)]) + "\n")
    assert read_questions(path).questions[0].choices[0].hoi == 5000


def _stringify(row: list[Any]) -> None:
    k = next(i for i, v in enumerate(row) if v is not None)
    row[k] = [str(x) for x in row[k]] if isinstance(row[k], list) else str(row[k])


@pytest.mark.parametrize("source", ["vdet", "vdet_dense"])
@pytest.mark.parametrize("field", ["person_boxes", "boxes", "agent_scores", "role_scores"])
def test_vcoco_detections_with_strings_for_numbers_are_refused(base: dict[str, Path], tmp_path: Path,
                                                               source: str, field: str) -> None:
    doc = json.loads(base[source].read_text())
    image = doc["images"][0]
    key = field if field != "boxes" else "object_boxes" if "object_boxes" in image else "role_boxes"
    row = image[key][0]
    _stringify(row)
    path = tmp_path / "d.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(FormatError, match=rf"d\.json: record 0: {key}: expected numbers \(or null\), got '"):
        read_vcoco_detections(path)


@pytest.mark.parametrize("layout", ["json", "pickle"])
@pytest.mark.parametrize("key", ["person_box", "hold_agent", "hold_obj"])
def test_vsrl_detections_with_strings_for_numbers_are_refused(base: dict[str, Path], tmp_path: Path,
                                                              layout: str, key: str) -> None:
    from hoibench.formats.vcoco_predictions import _safe_unpickle

    records = [{k: (v.tolist() if isinstance(v, np.ndarray) else float(v) if isinstance(v, np.floating)
                    else int(v) if isinstance(v, np.integer) else v) for k, v in r.items()}
               for r in _safe_unpickle(base["vsrl"].read_bytes(), "vsrl.pkl")]
    v = records[0][key]
    records[0][key] = [str(x) for x in v] if isinstance(v, list) else str(v)
    path = tmp_path / f"d.{'json' if layout == 'json' else 'pkl'}"
    path.write_bytes(json.dumps(records).encode() if layout == "json" else pickle.dumps(records))
    with pytest.raises(FormatError, match=rf"record 0: {key}: expected (a number|\d numbers), got "):
        read_vcoco_detections(path)


def test_vcoco_detections_as_plain_numbers_still_read(base: dict[str, Path]) -> None:
    """The string checks leave the numbers alone (nulls included)."""
    a = read_vcoco_detections(base["vdet"]).detections
    b = read_vcoco_detections(base["vsrl"]).detections
    np.testing.assert_array_equal(a.person_boxes, b.person_boxes)
    np.testing.assert_array_equal(a.agent_scores, b.agent_scores)
