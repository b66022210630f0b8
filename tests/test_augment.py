"""Augmentation pipeline: config, prompts, deficits, the run loop (resume, attempt limit,
pseudo-labels), sharding, crawled-image filtering and the CLI, with a cheap generator."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from PIL import Image

from hoibench._exceptions import ConfigError, FormatError
from hoibench.augment import (
    AugmentConfig,
    Detection,
    Detector,
    FakeDetector,
    Manifest,
    PromptSet,
    StageError,
    TargetClass,
    augment_deficits,
    collect_augmented,
    filter_images,
    load_config,
    parse_shard,
    read_deficits,
    read_manifests,
    run_sharded,
    shard_targets,
    verb_gerund,
)
from hoibench.augment import _shard as shard_mod
from hoibench.augment._prompts import box_text
from hoibench.cli import cli
from hoibench.formats import write_ppdm
from hoibench.models import ScriptedBackend
from tests.test_augment_helpers import (
    EAT_APPLE,
    HOLD_CUP,
    RIDE_HORSE,
    VOCAB,
    Script,
    SolidGenerator,
    pipeline,
    real_dataset,
)


def _deficits_file(path: Path, rows: list[dict]) -> Path:
    path.write_text(json.dumps({"kind": "balanced_deficits", "l_train": 4, "l_test": 1, "seed": 0,
                                "classes": rows}))
    return path


def _row(hoi: int, deficit: int, split: str = "train") -> dict:
    v, o = (int(x) for x in VOCAB.hoi_verb_object[hoi])
    return {"hoi": hoi, "name": VOCAB.hoi_name(hoi), "verb": v, "object": o, "split": split,
            "have": 4 - deficit, "need": 4, "deficit": deficit}


# ------------------------------------------------------------------------------------ config
def test_config_rejects_unknown_keys_and_bad_values(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("detector: {box_thresh: 0.3}\n")
    with pytest.raises(ConfigError, match=r"c.yaml: detector.box_thresh: unknown key"):
        load_config(f)
    f.write_text("seed: zero\n")
    with pytest.raises(ConfigError, match=r"seed: expected int"):
        load_config(f)
    f.write_text("generator: {kind: dalle}\n")
    with pytest.raises(ConfigError, match=r"generator.kind must be one of"):
        load_config(f)
    f.write_text("max_attempts: 0\n")
    with pytest.raises(ConfigError, match="max_attempts"):
        load_config(f)
    f.write_text("- a\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_config(f)


def test_config_loads_yaml_and_fingerprint_ignores_attempt_limit(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("seed: 5\nmax_attempts: 3\nllm: {kind: openai, model: m, options: {concurrency: 2}}\n"
                 "detector: {kind: fake}\n")
    cfg = load_config(f, max_attempts=9)
    assert cfg.seed == 5 and cfg.max_attempts == 9 and cfg.llm.options == {"concurrency": 2}
    assert cfg.detector.kind == "fake" and cfg.detector.box_threshold == 0.35
    assert cfg.fingerprint() == cfg.replace(max_attempts=1).fingerprint()
    assert cfg.fingerprint() != cfg.replace(seed=6).fingerprint()
    with pytest.raises(AttributeError):
        cfg.seed = 1  # type: ignore[misc]


def test_prompt_files_are_checked(tmp_path: Path) -> None:
    bad = tmp_path / "verify.txt"
    bad.write_text("Is the {persn} {verb_ing} the {object}?")
    with pytest.raises(ConfigError, match=r"unknown placeholder \{persn\}"):
        PromptSet.load({"verify": str(bad)})
    good = tmp_path / "v2.txt"
    good.write_text("{description} -- {verb_ing} {a_object}?")
    p = PromptSet.load({"verify": str(good)})
    assert p.fill("verify", verb="eat", obj="apple", description="D") == "D -- eating an apple?"
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text("prompts: {verify: v2.txt}\n")  # relative to the config file
    assert load_config(cfg_file).prompts["verify"] == str(good)


def test_words_answers_and_boxes() -> None:
    assert [verb_gerund(v) for v in ("ride", "run", "open", "lie_on", "talk_on", "no_interaction",
                                     "control", "tie", "sip", "exit", "feed")] == [
        "riding", "running", "opening", "lying on", "talking on", "not interacting with",
        "controlling", "tying", "sipping", "exiting", "feeding"]
    assert box_text([10.4, 20.6, 30, 40], width=100, height=50) == "[10, 21, 30, 40]"
    assert box_text([10, 20, 30, 40], width=100, height=50, box_format="relative1000") == "[100, 400, 300, 800]"
    assert box_text([33.3, 0, 66.7, 49.9], width=100, height=50, box_format="relative1000") == "[333, 0, 667, 998]"
    with pytest.raises(ConfigError, match="box_format must be one of"):
        box_text([0, 0, 1, 1], width=1, height=1, box_format="relative")


# ---------------------------------------------------------------------------------- deficits
def test_read_deficits_contract(tmp_path: Path) -> None:
    f = _deficits_file(tmp_path / "d.json", [_row(RIDE_HORSE, 2), _row(HOLD_CUP, 1, "test"),
                                             _row(EAT_APPLE, 0)])
    targets = read_deficits(f, VOCAB)
    assert targets == [TargetClass(RIDE_HORSE, VOCAB.verb_index("ride"), VOCAB.object_index("horse"), 2,
                                   "ride horse")]
    assert [t.hoi for t in read_deficits(f, VOCAB, split="test")] == [HOLD_CUP]


@pytest.mark.parametrize(("rows", "match"), [
    ([{**_row(RIDE_HORSE, 2), "verb": 3}], r"record 0: verb: HOI class .* is \(ride horse\)"),
    ([{**_row(RIDE_HORSE, 2), "deficit": 3}], r"record 0: deficit: deficit 3 differs"),
    ([{**_row(RIDE_HORSE, 2), "hoi": 900}], r"record 0: hoi: HOI class 900 is outside"),
    ([_row(RIDE_HORSE, 2), _row(RIDE_HORSE, 1)], r"record 1: hoi: .* listed twice"),
    ([{**_row(RIDE_HORSE, 2), "deficit": "2"}], r"record 0: deficit: expected an integer"),
])
def test_read_deficits_errors_name_file_record_field(tmp_path: Path, rows: list, match: str) -> None:
    f = _deficits_file(tmp_path / "d.json", rows)
    with pytest.raises(FormatError, match=match):
        read_deficits(f, VOCAB)


def test_read_deficits_wrong_kind(tmp_path: Path) -> None:
    f = tmp_path / "d.json"
    f.write_text(json.dumps({"kind": "hico_map"}))
    with pytest.raises(FormatError, match=r"d.json: kind: not a deficits file"):
        read_deficits(f, VOCAB)


# ---------------------------------------------------------------------------------- the loop
@pytest.fixture
def world(tmp_path: Path):
    real = real_dataset(tmp_path / "real", {EAT_APPLE: 6, RIDE_HORSE: 3, HOLD_CUP: 2})
    targets = [TargetClass.of(VOCAB, RIDE_HORSE, 2), TargetClass.of(VOCAB, HOLD_CUP, 3)]
    kwargs = {"vocab": VOCAB, "dataset": real, "images_dir": tmp_path / "real"}
    return real, targets, kwargs


def test_retrieval_describe_and_pseudo_labels(tmp_path: Path, world) -> None:
    real, targets, kw = world
    gen = SolidGenerator()
    res = augment_deficits(targets, out_dir=tmp_path / "o", pipeline=pipeline(gen, Script()), progress=True, **kw)
    recs = read_manifests(tmp_path / "o")
    describes = [r for r in recs if r["event"] == "describe"]
    # one description per kept image, each from a different real image of the class
    ride = [r for r in describes if r["hoi"] == RIDE_HORSE]
    assert len(ride) == 2 and len({r["reference"] for r in ride}) == 2
    ride_images = {real.file_names[i] for i in real.pair_image[real.pair_hoi == RIDE_HORSE]}
    assert {r["reference"] for r in ride} <= ride_images
    assert all(r["prompt"].startswith("A photo of a person riding a horse, in a sunny field like real_")
               for r in ride)
    # pseudo-labelling asked every verb of the object; "riding" and "holding" were confirmed
    att = next(r for r in recs if r["event"] == "attempt" and r["hoi"] == RIDE_HORSE)
    asked = {lab["verb"] for lab in att["labels"]}
    assert asked == set(VOCAB.valid_verbs_for_object()[VOCAB.object_index("horse")].tolist()) - {
        VOCAB.verb_index("no_interaction")}
    confirmed = sorted(p[2] for p in att["annotation"]["pairs"])
    assert confirmed == sorted([VOCAB.verb_index("ride"), VOCAB.verb_index("hold")])
    assert att["target_instances"] == 1
    rows = {r["hoi"]: r for r in res.classes}
    assert rows[RIDE_HORSE]["filled"] == 2 and rows[HOLD_CUP]["filled"] == 3
    counts = np.bincount(res.dataset.pair_hoi, minlength=VOCAB.n_hois)
    assert counts[RIDE_HORSE] == 2 and counts[HOLD_CUP] == 3
    assert len(gen.calls) == 5 and res.generated == 5


def test_target_only_pseudo_labels_and_basic_prompt_without_references(tmp_path: Path, world) -> None:
    _, targets, _kw = world
    cfg = AugmentConfig(pseudo_label_verbs="target")
    res = augment_deficits(targets, out_dir=tmp_path / "o", pipeline=pipeline(SolidGenerator(), Script(), cfg),
                           vocab=VOCAB)
    recs = read_manifests(tmp_path / "o")
    assert all(r["reference"] is None for r in recs if r["event"] == "describe")
    assert {r["prompt"] for r in recs if r["event"] == "describe" and r["hoi"] == HOLD_CUP} == {
        "A photo of a person holding a cup"}
    assert all(len(r["labels"]) == 1 for r in recs if r["event"] == "attempt")
    assert res.dataset.n_pairs == 5


def test_attempt_limit_and_rejections_are_recorded(tmp_path: Path, world) -> None:
    _, targets, kw = world
    script = Script(reject_class={HOLD_CUP})
    res = augment_deficits(targets, out_dir=tmp_path / "o", pipeline=pipeline(SolidGenerator(), script),
                           max_attempts=4, **kw)
    rows = {r["hoi"]: r for r in res.classes}
    assert rows[HOLD_CUP] == {**rows[HOLD_CUP], "attempts": 4, "filled": 0, "status": "unfilled"}
    assert rows[RIDE_HORSE]["status"] == "filled"
    recs = [r for r in read_manifests(tmp_path / "o") if r["event"] == "attempt" and r["hoi"] == HOLD_CUP]
    assert [r["reason"] for r in recs] == ["verification answered no"] * 4
    prompts = [r["prompt"] for r in recs]
    assert all(b == a + " (reworded)" for a, b in itertools.pairwise(prompts))


class _NothingDetector(Detector):
    def detect(self, image, queries):
        return [Detection((0, 0, 5, 5), 0, 0.9)]  # a person, never the object

    def fingerprint(self):
        return {"model": "nothing"}


def test_no_pair_detected_is_rejected_without_asking(tmp_path: Path, world) -> None:
    _, targets, kw = world
    p = pipeline(SolidGenerator(), Script())
    p.detector = _NothingDetector()
    augment_deficits(targets[:1], out_dir=tmp_path / "o", pipeline=p, max_attempts=2, **kw)
    recs = [r for r in read_manifests(tmp_path / "o") if r["event"] == "attempt"]
    assert [r["reason"] for r in recs] == ["no person-object pair detected"] * 2
    assert not any(c for c in p.chat.region_vlm.calls if "Describe in detail" in str(c))


def test_person_object_classes_pair_distinct_people(tmp_path: Path) -> None:
    hug = int(VOCAB.hoi_index(VOCAB.verb_index("hug"), VOCAB.person))
    script = Script(yes_verbs=("hugging",))
    res = augment_deficits([TargetClass.of(VOCAB, hug, 1)], out_dir=tmp_path / "o", vocab=VOCAB,
                           pipeline=pipeline(SolidGenerator(), script))
    assert res.dataset.n_pairs == 2  # two people, each hugging the other
    im = res.dataset.image(0)
    assert (im.pairs[:, 0] != im.pairs[:, 1]).all() and (im.labels == VOCAB.person).all()


def test_resume_after_backend_failure_reuses_the_generated_image(tmp_path: Path, world) -> None:
    _, targets, kw = world
    script = Script()
    calls = {"n": 0}

    def flaky(req):
        calls["n"] += 1
        if calls["n"] == 3:
            raise ConnectionError("server went away")
        return script.llm(req)

    out = tmp_path / "o"
    gen1 = SolidGenerator()
    with pytest.raises(StageError, match="server went away"):
        augment_deficits(targets, out_dir=out, pipeline=pipeline(gen1, script, llm=ScriptedBackend(flaky, model="llm")), **kw)
    gen2 = SolidGenerator()
    res = augment_deficits(targets, out_dir=out, pipeline=pipeline(gen2, script), **kw)
    assert res.reused == 1 and not set(gen1.calls) & set(gen2.calls)
    ref = augment_deficits(targets, out_dir=tmp_path / "ref", pipeline=pipeline(SolidGenerator(), script), **kw)
    assert ref.dataset.equals(res.dataset)


def test_torn_manifest_line_is_ignored_and_repaired(tmp_path: Path, world) -> None:
    _, targets, kw = world
    out = tmp_path / "o"
    augment_deficits(targets[:1], out_dir=out, pipeline=pipeline(SolidGenerator(), Script()), max_attempts=1, **kw)
    with open(out / "manifest.jsonl", "ab") as fh:
        fh.write(b'{"event": "attempt", "hoi": 13')  # a crash mid-write
    res = augment_deficits(targets[:1], out_dir=out, pipeline=pipeline(SolidGenerator(), Script()), **kw)
    assert res.classes[0]["filled"] == 2
    lines = (out / "manifest.jsonl").read_bytes().split(b"\n")
    assert any(line.endswith(b'"hoi": 13') for line in lines)  # kept, on its own line
    Manifest(out / "manifest.jsonl")  # and the file still reads
    assert len(read_manifests(out)) > 0
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "manifest.jsonl").write_text('{"event": "describe"}\nnot json\n{"event": "describe"}\n')
    with pytest.raises(FormatError, match=r"manifest.jsonl: record 2: not a JSON record"):
        read_manifests(bad)


def test_output_folder_of_another_config_is_refused(tmp_path: Path, world) -> None:
    _, targets, kw = world
    augment_deficits(targets, out_dir=tmp_path / "o", pipeline=pipeline(SolidGenerator(), Script()),
                     max_attempts=1, **kw)
    with pytest.raises(ConfigError, match="different config"):
        augment_deficits(targets, out_dir=tmp_path / "o", max_attempts=1, **kw,
                         pipeline=pipeline(SolidGenerator(), Script(), AugmentConfig(seed=1)))


# ----------------------------------------------------------------------------------- sharding
def test_shard_targets_partitions_and_balances() -> None:
    targets = [TargetClass(h, 0, 0, need) for h, need in enumerate([9, 1, 4, 4, 3, 2, 8, 1])]
    shards = shard_targets(targets, 3)
    flat = sorted(t.hoi for s in shards for t in s)
    assert flat == list(range(8))
    loads = sorted(sum(t.need for t in s) for s in shards)
    assert loads == [10, 11, 11]
    assert shards == shard_targets(list(targets), 3)  # a pure function of its input
    for s in shards:  # input order within a shard
        assert [t.hoi for t in s] == sorted(t.hoi for t in s)
    assert shard_targets(targets, 1) == [targets]
    with pytest.raises(ConfigError):
        shard_targets(targets, 0)
    assert parse_shard("1/4") == (1, 4) and parse_shard("auto") is None and parse_shard(None) is None
    for bad in ("4/4", "a/b", "1-4"):
        with pytest.raises(ConfigError):
            parse_shard(bad)


def test_sharded_runs_merge_to_the_single_run(tmp_path: Path, world) -> None:
    _, targets, kw = world
    script = Script(reject={(RIDE_HORSE, 0)})
    single = augment_deficits(targets, out_dir=tmp_path / "one", pipeline=pipeline(SolidGenerator(), script), **kw)
    out = tmp_path / "two"
    gens = [SolidGenerator(), SolidGenerator()]
    for i in (1, 0):
        augment_deficits(targets, out_dir=out, pipeline=pipeline(gens[i], script), shard=(i, 2), **kw)
    assert {p.name for p in out.glob("manifest*.jsonl")} == {"manifest.shard-0-of-2.jsonl",
                                                             "manifest.shard-1-of-2.jsonl"}
    assert gens[0].calls and gens[1].calls
    merged = collect_augmented(out, VOCAB)
    assert merged.dataset.equals(single.dataset)
    for name in single.dataset.file_names:
        assert (out / "images" / name).read_bytes() == (tmp_path / "one" / "images" / name).read_bytes()


class _FakeState:
    """accelerate's PartialState as two processes see it."""

    def __init__(self, index: int, log: list) -> None:
        self.process_index, self.num_processes, self.device = index, 2, f"cuda:{index}"
        self.is_main_process = index == 0
        self.log = log

    def wait_for_everyone(self) -> None:
        self.log.append(("barrier", self.process_index))


def test_run_sharded_with_accelerate_state(monkeypatch: pytest.MonkeyPatch) -> None:
    log: list = []
    results = []
    for rank in (1, 0):
        monkeypatch.setattr(shard_mod, "_accelerate_state", lambda r=rank: _FakeState(r, log))
        results.append(run_sharded(lambda sh, dev: log.append(("work", sh, dev)),
                                   lambda: log.append(("finish",)) or "merged"))
    assert results == [None, "merged"]  # only the main process merges
    assert log == [("work", (1, 2), "cuda:1"), ("barrier", 1),
                   ("work", (0, 2), "cuda:0"), ("barrier", 0), ("finish",)]
    monkeypatch.setattr(shard_mod, "_accelerate_state", lambda: None)
    assert run_sharded(lambda sh, dev: log.append(("solo", sh)), lambda: "done") == "done"
    assert run_sharded(lambda sh, dev: log.append(("manual", sh)), lambda: "m", shard=(2, 3)) == "m"
    assert log[-2:] == [("solo", (0, 1)), ("manual", (2, 3))]
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert shard_mod._accelerate_state.__call__() is None


# --------------------------------------------------------------------------- crawled images
def test_filter_crawled_images_stops_when_filled(tmp_path: Path) -> None:
    crawled = tmp_path / "crawled"
    crawled.mkdir()
    for k in range(4):
        Image.new("RGB", (20, 16), (k * 40, 0, 0)).save(crawled / f"c{k}.jpg")
    items = [(crawled / f"c{k}.jpg", TargetClass.of(VOCAB, RIDE_HORSE, 2)) for k in range(4)]
    res = filter_images(items, vocab=VOCAB, images_root=crawled, out_dir=tmp_path / "o",
                        pipeline=pipeline(None, Script()))
    assert res.dataset.file_names == ("c0.jpg", "c1.jpg")
    assert res.images_root == crawled.resolve()
    again = filter_images(items, vocab=VOCAB, images_root=crawled, out_dir=tmp_path / "o",
                          pipeline=pipeline(None, Script(reject_class={RIDE_HORSE})))
    assert again.dataset.equals(res.dataset)  # resumed: nothing asked twice


# ------------------------------------------------------------------------------------- CLI
def _cli(args: list[str]) -> tuple[int, str]:
    res = CliRunner().invoke(cli, args, catch_exceptions=True)
    return res.exit_code, res.output + ("" if res.exception is None else repr(res.exception))


def test_cli_filter_with_constant_backends(tmp_path: Path) -> None:
    crawled = tmp_path / "crawled" / str(RIDE_HORSE)
    crawled.mkdir(parents=True)
    for k in range(2):
        Image.new("RGB", (20, 16)).save(crawled / f"c{k}.png")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("detector: {kind: fake}\npseudo_label_verbs: target\n"
                   "region_vlm: {kind: constant, reply: 'Yes.'}\nllm: {kind: constant, reply: 'yes'}\n")
    code, out = _cli(["augment", "filter", "--images", str(tmp_path / "crawled"), "--out", str(tmp_path / "o"),
                      "--config", str(cfg), "--no-progress"])
    assert code == 0, out
    assert "2 images, 2 instances" in out
    data = json.loads((tmp_path / "o" / "annotations" / "trainval_augment.json").read_text())
    assert [e["file_name"] for e in data] == [f"{RIDE_HORSE}/c0.png", f"{RIDE_HORSE}/c1.png"]
    assert data[0]["hoi_annotation"][0]["hoi_category_id"] == RIDE_HORSE + 1


def test_cli_split_augment_split_loop(tmp_path: Path) -> None:
    """split balanced → deficits.json → augment run (tiny SDXL) → split balanced --extra-train:
    every class ends with exactly L train instances."""
    pytest.importorskip("diffusers")
    real = real_dataset(tmp_path / "real", {EAT_APPLE: 10, RIDE_HORSE: 4, HOLD_CUP: 3})
    write_ppdm(real, tmp_path / "real.json")
    split = ["split", "balanced", "--dataset", str(tmp_path / "real.json"), "--top-k", "3", "--l-train", "4",
             "--l-test", "1"]
    code, out = _cli([*split, "--out", str(tmp_path / "s0")])
    assert code == 0, out
    first = json.loads((tmp_path / "s0" / "deficits.json").read_text())
    assert {c["hoi"] for c in first["classes"] if c["split"] == "train"} == {RIDE_HORSE, HOLD_CUP}
    cfg = tmp_path / "c.yaml"
    cfg.write_text("generator: {kind: tiny, steps: 1, width: 32, height: 32}\ndetector: {kind: fake}\n"
                   "pseudo_label_verbs: target\ndescribe_vlm: {kind: constant, reply: 'at dawn'}\n"
                   "region_vlm: {kind: constant, reply: 'Yes'}\nllm: {kind: constant, reply: 'Yes'}\n")
    code, out = _cli(["augment", "run", "--deficits", str(tmp_path / "s0" / "deficits.json"),
                      "--dataset", str(tmp_path / "real.json"), "--images", str(tmp_path / "real"),
                      "--out", str(tmp_path / "aug"), "--config", str(cfg), "--no-progress"])
    assert code == 0, out
    assert "filled" in out and "unfilled" not in out
    rec = next(r for r in read_manifests(tmp_path / "aug") if r["event"] == "generated")
    assert rec["prompt"] == f"A photo of a person {'riding a horse' if rec['hoi'] == RIDE_HORSE else 'holding a cup'}, at dawn"
    run = json.loads((tmp_path / "aug" / "run.json").read_text())
    assert run["models"]["generator"]["model"] == "tiny-random-sdxl"
    assert (tmp_path / "aug" / "chat_cache.sqlite").exists()
    code, out = _cli([*split, "--extra-train", str(tmp_path / "aug" / "annotations" / "trainval_augment.json"),
                      "--out", str(tmp_path / "s1"), "--json"])
    assert code == 0, out
    stats = json.loads((tmp_path / "s1" / "stats.json").read_text())
    train = stats["sets"]["train"]
    assert train["min"] == train["max"] == 4 and train["classes"] == 3 and train["extra_images"] > 0
    assert stats["total_deficit"]["train"] == 0
    assert [c for c in json.loads((tmp_path / "s1" / "deficits.json").read_text())["classes"]
            if c["split"] == "train"] == []
    code, out = _cli(["augment", "collect", "--out", str(tmp_path / "aug"), "--dataset", str(tmp_path / "real.json")])
    assert code == 0 and "kept images" in out


def test_cli_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from hoibench.cli import main

    cfg = tmp_path / "c.yaml"
    cfg.write_text("detecter: {}\n")
    deficits = _deficits_file(tmp_path / "d.json", [_row(RIDE_HORSE, 1)])
    with pytest.raises(SystemExit) as exc:
        main(["augment", "run", "--deficits", str(deficits), "--images", str(tmp_path), "--out",
              str(tmp_path / "o"), "--config", str(cfg)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "c.yaml: detecter: unknown key" in err
    bad = tmp_path / "crawled" / "horse"
    bad.mkdir(parents=True)
    code, out = _cli(["augment", "filter", "--images", str(tmp_path / "crawled"), "--out", str(tmp_path / "o2")])
    assert code != 0 and "named by HOI class index" in out


def test_grounding_dino_labels_map_back_to_queries() -> None:
    from hoibench.augment._models import _match_query, limit_detections

    queries = ["person", "baseball bat"]
    assert [_match_query(x, queries) for x in ("person", "Baseball  bat", "bat", "person baseball", "dog")] == [
        0, 1, 1, 0, -1]
    dets = [Detection((0, 0, 1, 1), 0, s) for s in (0.2, 0.9, 0.5)] + [Detection((0, 0, 2, 2), 1, 0.3)]
    assert [(d.query, d.score) for d in limit_detections(dets, 2)] == [(0, 0.9), (0, 0.5), (1, 0.3)]


def test_fake_detector_contract() -> None:
    img = Image.new("RGB", (40, 20))
    dets = FakeDetector().detect(img, ["person", "horse"])
    assert [d.query for d in dets] == [0, 1] and dets[1].box == (20.0, 5.0, 40.0, 20.0)
    assert [d.query for d in FakeDetector().detect(img, ["person"])] == [0, 0]


def test_openai_backend_and_cache_through_a_fake_server(tmp_path: Path, world) -> None:
    """The chat stages on the runner's OpenAI-compatible backend and SQLite cache, against a local
    fake server: a second run with the same cache sends no request and gives the same dataset."""
    pytest.importorskip("httpx")
    from hoibench.augment import AugmentPipeline
    from hoibench.testing import FakeChatServer, request_image, request_text

    _, targets, kw = world
    seen_images: list[bytes] = []

    def handler(body: dict) -> str:
        text = request_text(body)
        img = request_image(body)
        if img is not None:
            seen_images.append(img)
        if text.startswith("This image shows"):
            return "A photo of a person riding a horse, by a lake"
        if text.startswith("Describe in detail"):
            return "The person sits on the horse and holds the reins."
        if text.startswith("Paraphrase"):
            return "A person rides a horse near a lake"
        return "Yes"

    with FakeChatServer(handler) as server:
        cfg_file = tmp_path / "c.yaml"
        stage = (f"{{kind: openai, model: fake-model, cache: {tmp_path / 'cache.sqlite'}, "
                 f"options: {{base_urls: ['{server.url}'], max_retries: 0, concurrency: 4}}}}")
        cfg_file.write_text(f"detector: {{kind: fake}}\npseudo_label_verbs: target\n"
                            f"describe_vlm: {stage}\nregion_vlm: {stage}\nllm: {stage}\n")
        cfg = load_config(cfg_file)
        results, counts = [], []
        for run in ("a", "b"):
            p = AugmentPipeline.from_config(cfg, out_dir=tmp_path / run, generator=SolidGenerator())
            before = server.count
            results.append(augment_deficits(targets[:1], out_dir=tmp_path / run, pipeline=p, **kw))
            counts.append(server.count - before)
    assert counts[0] == 2 * (1 + 3)  # per kept image: describe, region description, verify, label
    assert counts[1] == 0
    assert results[0].dataset.equals(results[1].dataset) and results[0].dataset.n_pairs == 2
    assert seen_images and all(img[:4] == b"\x89PNG" for img in seen_images)


def test_retrieval_on_bundled_hico_det_layout(tmp_path: Path) -> None:
    """References come from the real HICO-DET train set, found in its ``train2015/`` folder."""
    from hoibench.augment._pipeline import _Retriever
    from hoibench.datasets import load_dataset

    ds = load_dataset("hico-det:train")
    hoi = RIDE_HORSE
    rows = np.unique(ds.pair_image[ds.pair_hoi == hoi])
    (tmp_path / "train2015").mkdir()
    for r in rows:
        (tmp_path / "train2015" / ds.file_names[r]).touch()
    retr = _Retriever(ds, tmp_path, seed=0)
    refs = [retr.reference(hoi, k) for k in range(len(rows) + 1)]
    names = [r[0] for r in refs]
    assert len(set(names[:-1])) == len(rows) and names[-1] == names[0]  # each once, then cycling
    assert {ds.index_of(n) for n in names} == set(rows.tolist())
    assert all(p == tmp_path / "train2015" / n for n, p in refs)
    assert names == [r[0] for r in (_Retriever(ds, tmp_path, seed=0).reference(hoi, k)
                                    for k in range(len(rows) + 1))]
    assert names != [r[0] for r in (_Retriever(ds, tmp_path, seed=1).reference(hoi, k)
                                    for k in range(len(rows) + 1))]
    (tmp_path / "train2015" / names[0]).unlink()
    with pytest.raises(FormatError, match="reference image not found"):
        retr.reference(hoi, 0)
