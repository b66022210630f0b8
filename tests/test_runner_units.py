"""Unit tests of the VLM runner's pure parts: box conventions, prompt templates, reply parsing,
the response cache, external detections, the vLLM backend (fake engine) and the error analyses."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from hoibench._exceptions import ConfigError, FormatError, MissingExtraError, ValidationError
from hoibench.analysis import head_to_tail_recall, misattribution_share
from hoibench.data import Choice, HOIDataset, HOIImage, MCAnswer, MCQuestion
from hoibench.models import (
    CachedBackend,
    ChatMessage,
    ChatRequest,
    GenerationParams,
    ImagePart,
    ResponseCache,
    ScriptedBackend,
    make_backend,
)
from hoibench.models._vllm import VLLMBackend
from hoibench.runners.mcq import (
    load_detections,
    load_template,
    match_person,
    model_frame,
    parse_detection,
    parse_image_size,
    parse_letters,
    render_question,
    resolve_box_convention,
    smart_resize,
)
from hoibench.vocab import hico_det

# ----------------------------------------------------------------------------- boxes


@pytest.mark.parametrize(("h", "w", "factor", "max_pixels", "expected"), [
    (480, 640, 28, 12_845_056, (476, 644)),
    (427, 640, 28, 12_845_056, (420, 644)),
    (1080, 1920, 28, 12_845_056, (1092, 1932)),
    (1080, 1920, 28, 28 * 28 * 1280, (728, 1316)),
    (20, 20, 28, 12_845_056, (56, 56)),
    (480, 640, 32, 12_845_056, (480, 640)),
    (427, 640, 32, 12_845_056, (416, 640)),
])
def test_smart_resize_golden(h, w, factor, max_pixels, expected):
    assert smart_resize(h, w, factor=factor, max_pixels=max_pixels) == expected


def test_smart_resize_invariants():
    rng = np.random.default_rng(0)
    for h, w in rng.integers(20, 3000, size=(200, 2)):
        if max(h, w) / min(h, w) > 200:
            continue
        rh, rw = smart_resize(int(h), int(w), max_pixels=1_000_000)
        assert rh % 28 == 0 and rw % 28 == 0
        assert 3136 <= rh * rw <= 1_000_000
    with pytest.raises(ValidationError, match="aspect ratio"):
        smart_resize(10, 5000)


def test_frames_per_convention():
    box = (310.0, 19.0, 362.0, 123.0)
    q = model_frame("qwen2.5", 640, 480)
    assert (q.sent_width, q.sent_height) == (644, 476) and q.resized and not q.relative
    # float32 like the released code: 310 * (644/640) = 311.9375
    assert q.format(q.to_model(box)) == "[311.94, 18.84, 364.26, 121.97]"
    q3 = model_frame("qwen3", 640, 427)
    assert (q3.sent_width, q3.sent_height) == (640, 416) and q3.relative
    assert q3.format(q3.to_model(box)) == "[484, 44, 566, 288]"
    iv = model_frame("internvl", 640, 480, perceived=(448, 336))
    assert not iv.resized
    assert iv.format(iv.to_model(box)) == "[217.0, 13.3, 253.4, 86.1]"
    orig = model_frame("original", 640, 480)
    assert orig.format(orig.to_model(box)) == "[310.0, 19.0, 362.0, 123.0]"
    rel = model_frame("relative-1000", 1000, 500)
    assert rel.format(rel.to_model((100, 50, 200, 100))) == "[100, 100, 200, 200]"
    for f in (q, q3, iv, orig, rel):  # round trip
        np.testing.assert_allclose(f.from_model(f.to_model(box)), box, rtol=1e-5)
    with pytest.raises(ValidationError, match="perceived"):
        model_frame("internvl", 640, 480)
    with pytest.raises(ConfigError, match="box convention"):
        model_frame("qwen9", 640, 480)


def test_to_model_is_float32_multiplication_bit_for_bit() -> None:
    """``to_model`` computes without numpy; its results equal numpy's float32 product exactly."""
    import random

    from hoibench.runners.mcq._boxes import ModelFrame

    rnd = random.Random(7)
    for k in range(3000):
        w, h = rnd.randint(50, 4000), rnd.randint(50, 4000)
        if max(w, h) / min(w, h) > 150:
            continue
        f = model_frame(rnd.choice(["qwen2.5", "qwen3", "original", "relative-1000"]), w, h)
        box = [rnd.uniform(-10, 5000) if k % 3 else float(rnd.randint(0, 5000)) for _ in range(4)]
        if k % 5 == 0:
            box = [np.float64(v) for v in box]
        sx, sy = f.scale
        want = np.asarray(box, dtype=np.float32) * np.asarray([sx, sy, sx, sy], dtype=np.float32)
        assert f.to_model(box) == tuple(float(v) for v in want), (f, box)
    big = ModelFrame("internvl", 640, 480, 640, 480, 1e30, 1e30)  # products beyond float32: inf
    assert big.to_model([1e12, 2.0, 3.0, 4.0])[0] == float("inf")


def test_resolve_convention():
    assert resolve_box_convention("auto", "Qwen/Qwen2.5-VL-7B-Instruct") == "qwen2.5"
    assert resolve_box_convention("auto", "Qwen/Qwen2-VL-2B-Instruct") == "qwen2.5"
    assert resolve_box_convention("auto", "Qwen/Qwen3-VL-8B-Instruct") == "qwen3"
    assert resolve_box_convention("auto", "OpenGVLab/InternVL3-8B") == "internvl"
    assert resolve_box_convention("auto", "llava-hf/llava-onevision-qwen2-7b-ov-hf") == "original"
    assert resolve_box_convention("original", "Qwen/Qwen2.5-VL-7B") == "original"
    with pytest.raises(ConfigError, match="one of"):
        resolve_box_convention("qwen25", "x")


def test_frame_format_matches_python_list_repr():
    # the released code prints a Python list of floats rounded to two decimals
    vals = [523.0, 236.123, 571.5, 343.999]
    assert model_frame("original", 640, 480).format(vals) == str([round(v, 2) for v in vals])
    assert model_frame("relative-1000", 640, 480).format([1.5, 2.4999, 999.6, 0]) == "[2, 2, 1000, 0]"


# ----------------------------------------------------------------------------- prompts

QUESTION = MCQuestion(
    id="img1.jpg", file_name="img1.jpg", setting=2,
    choices=(Choice("hold a/an elephant"), Choice("feed a/an elephant"),
             Choice("no_interaction with a/an elephant"), Choice("pet a/an elephant")),
    correct=frozenset({0}), person_box=(310.0, 19.0, 362.0, 123.0))

# transcribed by hand from the released newbench_question_func.py (prompt_box_type="person")
EXPECTED_S2 = (
    "Context: You are given an image  <image> and a target person with a bounding box "
    "[310.0, 19.0, 362.0, 123.0].\n"
    "Question: Which of the following describes the interactions between the target person and any "
    "object in the image?\n"
    "Choices:\n"
    "{choices}\n"
    "IMPORTANT: Reply with the letter(s) ONLY, separated by commas if multiple (e.g. A,B).\n"
    "  For example, if correct answers are (A) and (B), your output must be: A,B  \n"
    "Do NOT include any brackets or other symbols. \n"
)
EXPECTED_S1_HEAD = "Question: Which of the following properly describes the interactions in the image  <image>?\nChoices:\n"


def _choice_lines(q, order, rename=True):
    out = []
    for k, i in enumerate(order):
        t = q.choices[i].text
        if rename and "no_interaction" in t:
            t = "no_interaction with elephant"
        out.append(f"({'ABCD'[k]}) {t}")
    return "\n".join(out)


def test_render_setting2_exact_text():
    tpl = load_template()
    r = render_question(QUESTION, tpl, box_text="[310.0, 19.0, 362.0, 123.0]", seed=3)
    order = QUESTION.order(3)
    assert r.order == order
    assert r.text == EXPECTED_S2.format(choices=_choice_lines(QUESTION, order))
    assert dict(r.letters) == {"ABCD"[k]: QUESTION.choices[i].text for k, i in enumerate(order)}


def test_render_setting1_and_answer_formats():
    tpl = load_template("crosshoi")
    r = render_question(QUESTION, tpl, setting=1)
    assert r.text.startswith(EXPECTED_S1_HEAD)
    assert r.text.endswith("Do NOT include any brackets or other symbols. \n")
    tag = render_question(QUESTION, tpl, setting=1, answer_format="reasoning_first")
    assert "<answer>A,B</answer>" in tag.text and tag.text.endswith("<answer>A,B</answer>")
    assert "Reasoning: \u2026\n" in tag.text
    with pytest.raises(ConfigError, match="answer_format"):
        render_question(QUESTION, tpl, setting=1, answer_format="json")
    with pytest.raises(ConfigError, match="box text"):
        render_question(QUESTION, tpl)


def test_render_pads_short_questions_like_the_released_code():
    q = MCQuestion(id="s", file_name="s.jpg", setting=1,
                   choices=(Choice("ride a/an horse"), Choice("herd a/an cow"), Choice("lasso a/an cow")),
                   correct=frozenset({0}))
    r = render_question(q, load_template(), seed=0)
    assert "(D) None\n" in r.text
    assert r.letters["D"] is None and sum(v is not None for v in r.letters.values()) == 3


def test_detection_and_size_prompts_exact():
    tpl = load_template()
    assert tpl.detection == (
        "Provide the bounding box coordinates for every single person in the input image. \n"
        " The box coordinates represent as [x1, y1, x2, y2], \n"
        " where x is the horizontal pixel coordinate from the left edge,\n"
        " and y is the vertical pixel coordinate from the top edge.\n"
        "Return the detection results in JSON format strictly. \n\n"
        "For example:\n"
        '{ "boxes": [[32, 109, 644, 418], [517, 0, 644, 23], [100, 50, 160, 200]]}\n')
    assert tpl.image_size.startswith("Please provide the coordinates for the bottom-right point of "
                                      "the input image. Assume the coordinate system origin")
    assert tpl.image_size.endswith("For example:\n```json\n[638, 415]\n```")
    assert tpl.tag == "crosshoi@1.0"


def test_user_template_rejects_unknown_keys(tmp_path):
    from importlib import resources

    import yaml

    raw = yaml.safe_load((resources.files("hoibench.runners.mcq") / "prompts" / "crosshoi.yaml").read_text())
    good = tmp_path / "mine.yaml"
    good.write_text(yaml.safe_dump({**raw, "version": "7"}))
    assert load_template(good).tag == "crosshoi@7"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**raw, "questoin_image": "x"}))
    with pytest.raises(FormatError, match="unknown keys"):
        load_template(bad)
    with pytest.raises(ConfigError, match="bundled"):
        load_template("nope")


# ----------------------------------------------------------------------------- parsing

VALID = {"A": "a", "B": "b", "C": "c", "D": "d"}


@pytest.mark.parametrize(("reply", "letters", "status"), [
    ("A", {"A"}, "ok"),
    ("A,B", {"A", "B"}, "ok"),
    ("a, c.", {"A", "C"}, "ok"),
    (" B , B ", {"B"}, "ok"),
    ("A,E", {"A"}, "ok"),  # E is not a choice: dropped, never guessed
    ("(A)", set(), "parse_error"),
    ("A and B", set(), "parse_error"),
    ("The answer is A", set(), "parse_error"),
    ("", set(), "parse_error"),
    ("<think>maybe C</think>A,D", {"A", "D"}, "ok"),
])
def test_parse_letters(reply, letters, status):
    p = parse_letters(reply, VALID)
    assert p.letters == frozenset(letters) and p.status == status


def test_parse_letters_keeps_a_letter_named_twice_in_tokens():
    p = parse_letters("B, a, b., E", VALID)
    assert p.letters == {"A", "B"} and p.tokens == ("B", "A", "B") and p.invalid == ("E",)


def test_parse_letters_tag_formats():
    assert parse_letters("Reasoning: x\n<answer>B, C</answer>", VALID, answer_format="reasoning_first").letters == {"B", "C"}
    assert parse_letters("B, C", VALID, answer_format="answer_tag").status == "parse_error"
    assert parse_letters(None, VALID).status == "parse_error"


def test_parse_detection_robust():
    fenced = 'Sure!\n```json\n{"boxes": [[1, 2, 30, 40], [5, 5, 9, 9]]}\n```\nHope it helps.'
    assert parse_detection(fenced).boxes == ((1, 2, 30, 40), (5, 5, 9, 9))
    assert parse_detection(fenced, strict=True).status == "ok"
    bare = 'Here: {"boxes": [[1, 2, 30, 40]]} and that is all {not json}'
    assert parse_detection(bare).boxes == ((1, 2, 30, 40),)
    assert parse_detection(bare, strict=True).status == "parse_error"  # released parser: fences only
    qwen = '```json\n[{"bbox_2d": [10, 20, 50, 80], "label": "person"}]\n```'
    assert parse_detection(qwen).boxes == ((10, 20, 50, 80),)
    bad = parse_detection('{"boxes": [[1, 2, 3], [5, 5, 1, 1], [0, 0, 4, 4]]}')
    assert bad.boxes == ((0, 0, 4, 4),) and bad.dropped == 2
    assert parse_detection('{"boxes": []}').status == "no_boxes"
    assert parse_detection("```json\n{boxes: [[1,2,3,4]]\n```").status == "parse_error"
    assert parse_detection("no people here").status == "parse_error"


def test_parse_image_size():
    assert parse_image_size("```json\n[638, 415]\n```") == (638.0, 415.0)
    assert parse_image_size("The size is [448, 336].") == (448.0, 336.0)
    assert parse_image_size("[[448, 336]]") == (448.0, 336.0)
    assert parse_image_size("[0, 336]") is None
    assert parse_image_size("about 400 by 300") is None


# ----------------------------------------------------------------------------- cache


def _req(text, image=b"img", **params):
    part = ImagePart(data=image, mime="image/png")
    return ChatRequest((ChatMessage.user(part, text),), GenerationParams(**params))


def test_cached_backend_stores_and_keys(tmp_path):
    inner = ScriptedBackend(lambda r: r.messages[0].parts[1].text.upper())
    cached = CachedBackend(inner, tmp_path / "c.sqlite")
    seen = []
    out = cached.generate([_req("a"), _req("b")], lambda i, r: seen.append((i, r.text)))
    assert [r.text for r in out] == ["A", "B"] and sorted(seen) == [(0, "A"), (1, "B")]
    assert (cached.hits, cached.misses) == (0, 2)
    again = CachedBackend(inner, tmp_path / "c.sqlite")  # a new process would see the same file
    out = again.generate([_req("a"), _req("b"), _req("a", image=b"other"), _req("a", max_tokens=7)])
    assert [r.text for r in out] == ["A", "B", "A", "A"]
    assert (again.hits, again.misses) == (2, 2)  # other image content / params = other key
    assert len(inner.calls) == 4


def test_cache_skips_errors_and_nondeterministic(tmp_path):
    calls = []

    def reply(r):
        calls.append(r)
        if len(calls) == 1:
            raise RuntimeError("boom")
        return "ok"

    cached = CachedBackend(ScriptedBackend(reply), ResponseCache(tmp_path / "c.sqlite"))
    assert not cached.generate([_req("x")])[0].ok
    assert cached.generate([_req("x")])[0].text == "ok"  # the error was not cached
    assert cached.generate([_req("x")])[0].meta["cached"] is True
    sampled = _req("y", temperature=0.7, seed=None)
    cached.generate([sampled])
    cached.generate([sampled])
    assert len(cached.cache) == 1 and len(calls) == 4


class _CountingDB:
    """A connection proxy that counts statements (sqlite3's own type cannot be patched)."""

    def __init__(self, db):
        self.db, self.statements = db, []

    def execute(self, sql, *args):
        self.statements.append(sql.split()[0])
        return self.db.execute(sql, *args)

    def executemany(self, sql, rows):
        self.statements.append("executemany")
        return self.db.executemany(sql, rows)

    def __enter__(self):
        return self.db.__enter__()

    def __exit__(self, *exc):
        return self.db.__exit__(*exc)

    def close(self):
        self.db.close()


def _rows(path):
    import sqlite3

    with sqlite3.connect(path) as db:  # another connection: what a killed run leaves on disk
        return dict(db.execute("SELECT key, text FROM responses").fetchall())


def test_queued_responses_commit_together_and_are_seen_at_once(tmp_path):
    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path)
    assert cache.put_later("k1", "A") is True and cache.put_later("k2", "B") is False
    assert cache.get("k1") == "A" and cache.get("k2") == "B"  # queued: seen before the commit
    assert _rows(path) == {}  # nothing on disk yet
    cache._db = counting = _CountingDB(cache._db)
    cache.flush()
    assert counting.statements == ["BEGIN", "executemany"]  # one transaction for both
    assert _rows(path) == {"k1": "A", "k2": "B"}
    cache.put("k3", "C")  # put commits at once
    assert _rows(path)["k3"] == "C" and len(cache) == 3
    cache.put_later("k4", "D")
    cache.close()  # close commits what is queued
    assert _rows(path)["k4"] == "D"


def test_a_failed_commit_is_raised_at_every_later_call(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite", exclusive=True)
    cache.put_later("k", "A")
    assert cache.get_many(["k", "x"]) == {"k": "A"}  # the batch lookup sees queued ones too
    cache._db.close()  # any SQLite error on commit (a full disk, a file gone read-only)
    with pytest.raises(ConfigError, match="could not store 1 response"):
        cache.flush()
    with pytest.raises(ConfigError, match="could not store 1 response"):
        cache.put_later("k2", "B")  # never silently dropped: every later call says so
    with pytest.raises(ConfigError, match="could not store 1 response"):
        cache.close()
    ResponseCache(tmp_path / "c.sqlite", exclusive=True).close()  # the failed close released the lock


def test_a_held_empty_cache_answers_misses_without_a_query(tmp_path):
    path = tmp_path / "c.sqlite"
    held = ResponseCache(path, exclusive=True)
    held._db = counting = _CountingDB(held._db)
    assert held.get("nope") is None and counting.statements == []
    held.put_later("k", "A")
    held.flush()
    assert held.get("k") == "A"  # what this process put is still found
    held.close()
    again = ResponseCache(path, exclusive=True)  # not empty at the start: lookups query
    again._db = counting = _CountingDB(again._db)
    assert again.get("k") == "A" and again.get("nope") is None and counting.statements == ["SELECT", "SELECT"]
    again.close()
    shared = ResponseCache(path)  # not held: another process may add rows, so it always queries
    assert shared._only_ours is None
    shared.close()


def test_a_streaming_session_commits_within_the_flush_interval(tmp_path):
    import asyncio

    from hoibench.models import ChatResponse, ChatSession
    from hoibench.models._cache import FLUSH_SECONDS

    class Inner(ChatSession):
        capacity = 4

        async def complete(self, request):
            return ChatResponse(request.messages[0].parts[1].text.upper())

    class Streaming(ScriptedBackend):
        def session(self):
            return Inner()

    path = tmp_path / "c.sqlite"
    cached = CachedBackend(Streaming(lambda r: "unused"), ResponseCache(path, exclusive=True))

    async def main():
        session = cached.session()
        out = await asyncio.gather(*(session.complete(_req(t)) for t in "abc"))
        assert [r.text for r in out] == ["A", "B", "C"]
        assert _rows(path) == {}  # queued, not yet committed
        await asyncio.sleep(FLUSH_SECONDS + 0.2)
        assert sorted(_rows(path).values()) == ["A", "B", "C"]  # committed while the session runs
        hit = await session.complete(_req("a"))
        assert hit.meta["cached"] is True
        await session.complete(_req("d"))
        await session.aclose()  # closing commits the rest at once
        assert sorted(_rows(path).values()) == ["A", "B", "C", "D"]

    asyncio.run(main())
    assert (cached.hits, cached.misses) == (1, 4)
    cached.cache.close()


# ----------------------------------------------------------------------------- detections


def test_load_detections_and_errors(tmp_path):
    p = tmp_path / "det.json"
    p.write_text(json.dumps({
        "a.jpg": [[0, 0, 10, 10]],
        "b.jpg": {"boxes": [[0, 0, 10, 10], [1, 1, 11, 11], [50, 50, 60, 60], [0, 0, 5, 5]],
                  "scores": [0.9, 0.8, 0.3, 0.95], "labels": ["person", "person", "person", "dog"]},
    }))
    det = load_detections(p)
    assert det["a.jpg"].tolist() == [[0, 0, 10, 10]]
    # NMS drops the 0.8 duplicate, the 0.3 box falls under the threshold, the dog is not a person
    assert det["b.jpg"].tolist() == [[0, 0, 10, 10]]
    p.write_text(json.dumps({"c.jpg": {"boxes": [[0, 0, 1]]}}))
    with pytest.raises(FormatError, match=r"det.json: record c.jpg: boxes"):
        load_detections(p)
    p.write_text(json.dumps({"c.jpg": {"boxes": [[0, 0, 1, 1]], "scores": [1, 2]}}))
    with pytest.raises(FormatError, match="scores"):
        load_detections(p)


def test_match_person_threshold_rules():
    target = (0.0, 0.0, 10.0, 10.0)
    half = np.array([[0.0, 0.0, 10.0, 5.0]])  # IoU exactly 0.5
    assert match_person(target, half) == (0, 0.5)
    assert match_person(target, half, strict=True)[0] == -1
    boxes = np.array([[100, 100, 120, 120], [0, 0, 9, 10], [0, 0, 10, 10.5]], dtype=float)
    assert match_person(target, boxes)[0] == 2  # the best overlap wins
    assert match_person(target, np.zeros((0, 4)))[0] == -1


# ----------------------------------------------------------------------------- backends


class FakeLLM:
    def __init__(self, fail_on=None):
        self.calls = []
        self.fail_on = fail_on

    def chat(self, conversations, sampling_params, use_tqdm):
        self.calls.append((conversations, sampling_params))
        outs = []
        for conv in conversations:
            text = conv[0]["content"][1]["text"]
            if self.fail_on and self.fail_on in text and len(conversations) > 0:
                raise ValueError("prompt too long")
            outs.append(SimpleNamespace(outputs=[SimpleNamespace(text=f"re:{text}")]))
        return outs


def test_vllm_backend_builds_chat_requests():
    llm = FakeLLM()
    b = VLLMBackend(model="m", batch_size=2, llm=llm, sampling_params=lambda **kw: kw)
    got = []
    out = b.generate([_req("a"), _req("b", max_tokens=9), _req("c")], lambda i, r: got.append(i))
    assert [r.text for r in out] == ["re:a", "re:b", "re:c"] and got == [0, 1, 2]
    assert len(llm.calls) == 2 and len(llm.calls[0][0]) == 2
    conv, sampling = llm.calls[0]
    part = conv[0][0]["content"][0]
    assert part["type"] == "image_url" and part["image_url"]["url"].startswith("data:image/png;base64,")
    assert sampling[1] == {"max_tokens": 9, "temperature": 0.0, "top_p": 1.0, "seed": 0}
    assert b.fingerprint() == {"backend": "vllm", "model": "m", "engine_kwargs": {}}


def test_vllm_backend_isolates_a_failing_request():
    b = VLLMBackend(model="m", batch_size=3, llm=FakeLLM(fail_on="bad"), sampling_params=lambda **kw: kw)
    out = b.generate([_req("a"), _req("bad"), _req("c")])
    assert [r.ok for r in out] == [True, False, True] and "prompt too long" in out[1].error


def test_vllm_missing_extra_and_registry():
    with pytest.raises(MissingExtraError, match=r"hoibench\[vllm\]"):
        VLLMBackend(model="m").generate([_req("a")])
    with pytest.raises(ConfigError, match="did you mean 'openai'"):
        make_backend("openia", model="m")
    assert make_backend("openai", model="m", base_urls=["http://x/v1"]).fingerprint()["model"] == "m"


# ----------------------------------------------------------------------------- analysis


def _toy_dataset():
    v = hico_det()
    ride = v.verb_index("ride")
    feed = v.verb_index("feed")
    hold = v.verb_index("hold")
    horse = v.object_index("horse")
    person = v.person
    img = HOIImage.from_lists(
        "x.jpg",
        boxes=[[0, 0, 10, 10], [50, 0, 60, 10], [20, 0, 40, 10], [0, 0, 10.5, 10]],
        labels=[person, person, horse, person],
        # target rides; another person feeds the horse; the duplicate target box holds it
        pairs=[[0, 2, ride], [1, 2, feed], [3, 2, hold]], width=100, height=100)
    return HOIDataset.from_images(v, [img]), (ride, feed, hold, horse)


def test_misattribution_share_counts_other_peoples_interactions():
    ds, (ride, feed, hold, horse) = _toy_dataset()
    v = hico_det()

    def ch(verb, name):
        return Choice(name, hoi=int(v.hoi_index(np.array([verb]), np.array([horse]))[0]), verb=verb, object=horse)

    q = MCQuestion(id="x", file_name="x.jpg", setting=2,
                   choices=(ch(ride, "ride a/an horse"), ch(feed, "feed a/an horse"),
                            ch(hold, "hold a/an horse"), Choice("kiss a/an horse")),
                   correct=frozenset({0}), person_box=(0, 0, 10, 10))
    ans = [MCAnswer("x", frozenset({"ride a/an horse", "feed a/an horse", "hold a/an horse",
                                     "kiss a/an horse"}))]
    m = misattribution_share([q], ans, ds)
    # 3 false positives; only "feed" is another person's (hold belongs to the target's own box)
    assert (m.false_positives, m.misattributed) == (3, 1) and m.share == pytest.approx(1 / 3)
    assert m.per_question == {"x": ("feed a/an horse",)}
    other = MCQuestion(id="y", file_name="missing.jpg", setting=2, choices=q.choices,
                       correct=q.correct, person_box=q.person_box)
    m2 = misattribution_share([q, other], [*ans, MCAnswer("y", frozenset())], ds)
    assert m2.questions_not_in_dataset == 1


def test_head_to_tail_recall_bins_by_train_frequency():
    counts = np.array([100, 50, 10, 1, 0])
    qs, ans = [], []
    # class h is asked twice; the model gets head classes right and tail classes wrong
    for h in range(4):
        for k in range(2):
            qid = f"{h}-{k}"
            qs.append(MCQuestion(id=qid, file_name="f", setting=1,
                                 choices=(Choice(f"c{h}", hoi=h), Choice("z")), correct=frozenset({0})))
            ans.append(MCAnswer(qid, frozenset({f"c{h}"} if h < 2 or (k == 0 and h == 2) else set())))
    r = head_to_tail_recall(qs, ans, counts, n_bins=2)
    assert [(b.min_count, b.max_count, b.n_gt, b.n_tp) for b in r.bins] == [(50, 100, 4, 4), (1, 10, 4, 1)]
    assert r.bins[0].recall == 1.0 and r.bins[1].recall == 0.25
    assert r.per_class[2] == (10, 2, 1)
    with pytest.raises(ConfigError, match="n_bins"):
        head_to_tail_recall(qs, ans, counts, n_bins=0)


def test_person_object_and_swig_templates():
    q = MCQuestion(id="p", file_name="p.jpg", setting=2, choices=(Choice("hold a/an cup"), Choice("wash a/an cup")),
                   correct=frozenset({0}), person_box=(1, 2, 3, 4), object_box=(5, 6, 7, 8))
    r = render_question(q, load_template(), box_text="[1.0, 2.0, 3.0, 4.0]", object_box_text="[5.0, 6.0, 7.0, 8.0]")
    assert r.text.startswith(
        "Context: You are given an image  <image> and two bounding boxes:\n"
        "- Person bbox: [1.0, 2.0, 3.0, 4.0]\n"
        "- Object bbox: [5.0, 6.0, 7.0, 8.0]\n"
        "Question: Which of the following properly describes the interaction between the person and the object?\n"
        "Choices:\n(A) ")
    swig = load_template("crosshoi-swig")
    assert render_question(q, swig, box_text="[1, 2, 3, 4]").text.startswith(
        "Context: You are given an image  <image> and a target person with a bounding box [1, 2, 3, 4].\n"
        "Question: Which of the following best describes the interactions between the target person and any "
        "other persons in the image?\nChoices:\n")
    assert render_question(q, swig, setting=1).text.startswith(
        "Question: Which of the following best describes the human-human interactions in the image  <image>?\n")
    assert swig.instructions == load_template().instructions
