"""VLMEvalKit: `mcq export --to vlmevalkit` writes the TSV its CustomMCQDataset reads (checked
the way VLMEvalKit reads it: pandas, the base64/index image cells, the option columns), and
`mcq score` reads the prediction table its inference writes (every column but image, plus
`prediction`) to the same numbers as hoibench's own answers."""

from __future__ import annotations

import base64
import csv
import io
import json

import pytest

from hoibench.data import Choice, MCAnswer, MCQuestion
from hoibench.evaluation import MCQ_METRIC_NAMES, mcq_metrics
from hoibench.formats import write_questions
from hoibench.runners.mcq import model_frame
from tests.conftest import one_line_error

pd = pytest.importorskip("pandas", reason="VLMEvalKit's files are read here with pandas, as VLMEvalKit does")

TEXTS = ("hold a/an cup", "ride a/an horse", "feed a/an dog", "wash a/an car", "no_interaction a/an cup")


def _setup(tmp_path):
    from PIL import Image

    images = tmp_path / "images"
    images.mkdir()
    for k, size in enumerate([(640, 480), (500, 375)]):
        Image.new("RGB", size, (40 * k, 90, 200)).save(images / f"im{k}.jpg")
    qs = [
        MCQuestion("s1_0", "im0.jpg", 1, tuple(Choice(t) for t in TEXTS[:4]), frozenset({0, 2})),
        MCQuestion("s1_1", "im1.jpg", 1, tuple(Choice(t) for t in TEXTS[1:4]), frozenset({1})),  # padded to 4
        MCQuestion("s2_0", "im0.jpg", 2, tuple(Choice(t) for t in TEXTS[:4]), frozenset({1}),
                   person_box=(10.0, 20.0, 300.0, 400.0)),
        MCQuestion("s2_1", "im0.jpg", 2, tuple(Choice(t) for t in (TEXTS[0], TEXTS[4], TEXTS[3], TEXTS[2])),
                   frozenset({1, 3}), person_box=(320.0, 40.0, 600.0, 470.0)),
        MCQuestion("s2_2", "im1.jpg", 2, tuple(Choice(t) for t in TEXTS[:4]), frozenset({0, 1, 3}),
                   person_box=(5.0, 5.0, 250.0, 370.0)),
    ]
    write_questions(tmp_path / "q.jsonl", qs)
    return qs, images


def _read_like_vlmevalkit(path):
    """ImageBaseDataset.__init__: load the TSV, resolve short image cells to the row they name."""
    data = pd.read_csv(path, sep="\t")
    data["index"] = [str(x) for x in data["index"]]
    image_map = dict(zip(data["index"], [str(x) for x in data["image"]]))
    for k, v in image_map.items():
        if len(v) <= 64:
            assert v in image_map and len(image_map[v]) > 64
            image_map[k] = image_map[v]
    data["image"] = [image_map[k] for k in data["index"]]
    return data


def test_export_is_a_vlmevalkit_mcq_tsv_and_predictions_score_like_hoibench(tmp_path, capsys):
    from PIL import Image

    from hoibench.cli import main

    qs, images = _setup(tmp_path)
    main(["mcq", "export", "--questions", str(tmp_path / "q.jsonl"), "--to", "vlmevalkit", "--images", str(images),
          "--out", str(tmp_path / "out"), "--model", "Qwen2.5-VL-7B-Instruct", "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert summary["questions"] == 5 and summary["box_convention"] == "qwen2.5"
    data = _read_like_vlmevalkit(tmp_path / "out" / "HOIBench_MCQ.tsv")
    assert list(data["hoibench_id"]) == [q.id for q in qs]
    assert {"A", "B", "C", "D", "answer", "question", "hint"} <= set(data.columns)
    expected: dict[str, MCAnswer] = {}
    replies = []
    for q, (_, row) in zip(qs, data.iterrows()):
        with Image.open(images / q.file_name) as im:
            w, h = im.size
        frame = model_frame("qwen2.5", w, h)
        sent = Image.open(io.BytesIO(base64.b64decode(row["image"])))
        assert sent.size == (frame.sent_width, frame.sent_height) != (w, h)  # resized as mcq run sends it
        assert "<image>" not in row["question"]
        if q.setting == 2:
            assert frame.format(frame.to_model(q.person_box)) in row["question"]
        options = {k: row[k] for k in "ABCD" if isinstance(row[k], str)}
        # not the template's "None" padding (pandas reads it as NaN; VLMEvalKit would drop it)
        assert len(options) == len(q.choices)
        correct = {t.replace("no_interaction a/an", "no_interaction with") for t in q.correct_texts}
        assert {options[x] for x in row["answer"]} == correct
        # replies: the right letters, one letter, a wrong pair, garbage, the padding letter
        k = len(replies)
        reply = [",".join(row["answer"]), row["answer"][0], "A,B", "I think it is a horse", "D"][k]
        replies.append(reply)
        letters = options  # "D" of the 3-choice question is no letter of it: a parse error
        picked = [x.strip() for x in reply.split(",")] if k != 3 else []
        texts = set()
        for x in picked:
            shown = letters.get(x)
            if shown is not None:
                texts.add(next(c.text for c in q.choices
                                if c.text == shown or c.text.replace("no_interaction a/an", "no_interaction with") == shown))
        expected[q.id] = MCAnswer(q.id, frozenset(texts))
    # VLMEvalKit's inference output: the data without `image`, plus `prediction` (dump_tsv: QUOTE_ALL)
    pred = data.drop(columns=["image"]).assign(prediction=replies)
    pred.to_csv(tmp_path / "Qwen_HOIBench_MCQ.tsv", sep="\t", index=False, quoting=csv.QUOTE_ALL)
    main(["mcq", "score", "--questions", str(tmp_path / "q.jsonl"), "--answers", str(tmp_path / "Qwen_HOIBench_MCQ.tsv"),
          "--json", "-"])
    got = json.loads(capsys.readouterr().out)
    want = mcq_metrics(expected, qs).metrics()
    assert {k: got[k] for k in MCQ_METRIC_NAMES} == pytest.approx(want)
    # exactly right: all letters of s1_0, the one letter of the single-answer s2_0
    assert got["exact_match"] == pytest.approx(2 / 5) and got["n_answered"] == 5


def test_xlsx_predictions_and_bad_files(tmp_path, capsys):
    from hoibench.cli import main

    _, images = _setup(tmp_path)
    main(["mcq", "export", "--questions", str(tmp_path / "q.jsonl"), "--to", "vlmevalkit", "--images", str(images),
          "--out", str(tmp_path), "--box-convention", "original", "--name", "HOI"])
    capsys.readouterr()
    data = _read_like_vlmevalkit(tmp_path / "HOI.tsv")
    pred = data.drop(columns=["image"]).assign(prediction=[",".join(a) for a in data["answer"]])
    xlsx = tmp_path / "M_HOI.xlsx"
    try:
        import openpyxl  # noqa: F401
    except ImportError:
        xlsx.write_bytes(b"PK\x03\x04 not really a workbook")
        err = one_line_error(["mcq", "score", "--questions", str(tmp_path / "q.jsonl"), "--answers", str(xlsx)], capsys)
        assert "openpyxl" in err and "PRED_FORMAT=tsv" in err
    else:
        pred.to_excel(xlsx, index=False)
        main(["mcq", "score", "--questions", str(tmp_path / "q.jsonl"), "--answers", str(xlsx), "--json", "-"])
        assert json.loads(capsys.readouterr().out)["exact_match"] == 1.0
    # a table without hoibench's columns (another benchmark's predictions): one line naming the column
    pred.drop(columns=["hoibench_id"]).to_csv(tmp_path / "other.tsv", sep="\t", index=False)
    err = one_line_error(["mcq", "score", "--questions", str(tmp_path / "q.jsonl"), "--answers",
                          str(tmp_path / "other.tsv")], capsys)
    assert "other.tsv" in err and "hoibench_id" in err
    bad = pred.copy()
    bad.loc[1, "hoibench_order"] = "0,1,x"
    bad.to_csv(tmp_path / "bad.tsv", sep="\t", index=False)
    err = one_line_error(["mcq", "score", "--questions", str(tmp_path / "q.jsonl"), "--answers",
                          str(tmp_path / "bad.tsv")], capsys)
    assert "index 1" in err and "hoibench_order" in err
    # what a single request cannot serve: InternVL's size round, setting 3
    err = one_line_error(["mcq", "export", "--questions", str(tmp_path / "q.jsonl"), "--to", "vlmevalkit",
                          "--images", str(images), "--out", str(tmp_path), "--model", "InternVL3-8B"], capsys)
    assert "relative-1000" in err
