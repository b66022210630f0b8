"""A data file cannot make hoibench read or send a file outside the images folder the user gave.

The resolver (:class:`hoibench._io.ImageFolder`) on its own, then every command that opens an
image named by a data file — ``mcq run``, ``mcq build --judge``, ``augment run`` (and the crawl of
``augment filter``) — against a fake server that counts requests: each bad name is refused with one
line naming the file, record and image, before any request (the bad name is the last one, so a run
that checked names lazily would have sent the others first); names that stay inside still work.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from PIL import Image

from hoibench import FormatError
from hoibench._io import ImageFolder
from hoibench.augment import (
    TargetClass,
    augment_deficits,
    check_reference_images,
    filter_images,
    read_manifests,
)
from hoibench.benchmarks.mcq import NegativeFilter
from hoibench.cli import main
from hoibench.data import Choice, MCQuestion
from hoibench.formats import read_answers, read_ppdm, write_ppdm
from hoibench.formats.questions import write_questions
from hoibench.models import ScriptedBackend
from hoibench.testing import FakeChatServer, request_image
from tests.conftest import FIXTURES
from tests.test_augment_helpers import (
    HOLD_CUP,
    RIDE_HORSE,
    VOCAB,
    Script,
    SolidGenerator,
    pipeline,
    real_dataset,
)


def _png(path: Path, colour: tuple[int, int, int] = (10, 120, 200), size: tuple[int, int] = (32, 24)) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, colour).save(path)
    return path


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A real image outside every images folder: what a hostile name tries to reach."""
    return _png(tmp_path / "secret.png", (255, 0, 0))


# Each bad name: how to make it (given tmp_path and the images folder, where it may plant a
# symlink) and the words of its refusal.
BadCase = Callable[[Path, Path], str]
BAD: dict[str, tuple[BadCase, str]] = {
    "dotdot": (lambda tmp, images: "../secret.png", "climbs out of the images folder"),
    "dotdot-in-sub": (lambda tmp, images: "sub/../../secret.png", "climbs out of the images folder"),
    "backslash-dotdot": (lambda tmp, images: "sub\\..\\..\\secret.png", "climbs out of the images folder"),
    "absolute": (lambda tmp, images: str(tmp / "secret.png"), "is an absolute path"),
    "symlink-out": (lambda tmp, images: _link(images / "leak.png", tmp / "secret.png"), "through a symlink"),
    "symlinked-dir-out": (lambda tmp, images: _link(images / "elsewhere", tmp) + "/secret.png",
                          "through a symlink"),
    "nul": (lambda tmp, images: "im0.png\x00../../secret.png", "contains a NUL byte"),
    "drive": (lambda tmp, images: "C:\\secret.png", "is a Windows drive path"),
    "drive-relative": (lambda tmp, images: "C:secret.png", "is a Windows drive path"),
    "unc": (lambda tmp, images: "\\\\server\\share\\secret.png", "is a UNC network path"),
    "empty": (lambda tmp, images: "", "is empty"),
}


def _link(link: Path, target: Path) -> str:
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    return link.name


def _one_line_error(err: str, *parts: str) -> None:
    """The CLI's refusal: exactly one line, ``error: FILE: record R: field: 'NAME' problem``."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    for part in parts:
        assert part in lines[0], (part, lines[0])


# ------------------------------------------------------------------------------ the resolver
@pytest.mark.parametrize("case", sorted(BAD))
def test_resolver_refuses_names_that_leave_the_folder(tmp_path: Path, secret: Path, case: str) -> None:
    images = tmp_path / "images"
    images.mkdir()
    make, problem = BAD[case]
    name = make(tmp_path, images)
    with pytest.raises(FormatError) as exc:
        ImageFolder(images).path(name, file="q.jsonl", record=7)
    msg = str(exc.value)
    assert msg.startswith(f"q.jsonl: record 7: file_name: {name!r} ") and problem in msg
    assert "\n" not in msg and (exc.value.file, exc.value.record, exc.value.field) == ("q.jsonl", 7, "file_name")


def test_resolver_accepts_names_inside(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _png(store / "x.png")
    images = tmp_path / "images"
    for rel in ("a.png", "sub/b.png", "sub/deeper/c.png"):
        _png(images / rel)
    (images / "alias.png").symlink_to(images / "sub" / "b.png")  # a link that stays inside
    (images / "sub" / "up").symlink_to(images)  # ... also through a folder
    folder = ImageFolder(images)
    real = images.resolve()
    assert folder.path("a.png") == real / "a.png"
    assert folder.path("./sub//b.png") == real / "sub" / "b.png"
    assert folder.path("sub/deeper/../b.png") == real / "sub" / "b.png"
    assert folder.path("alias.png") == real / "alias.png"
    assert folder.path("sub/up/a.png") == real / "sub" / "up" / "a.png"
    assert folder.path("not-there-yet.png") == real / "not-there-yet.png"  # existence is the caller's
    assert folder.relative("sub/./deeper/../b.png") == "sub/b.png"
    # on POSIX a backslash is part of a file name: a file called 'a\b.png', not a/b.png
    assert folder.path("a\\b.png") == real / "a\\b.png"
    with pytest.raises(FormatError, match="names the images folder itself"):
        folder.path("sub/..")
    with pytest.raises(FormatError, match="expected an image name"):
        folder.path(3, record=0)
    # the folder the user named may itself be a link
    (tmp_path / "via").symlink_to(images)
    linked = ImageFolder(tmp_path / "via")
    assert linked.path("a.png") == real / "a.png" and linked.resolved == real
    assert linked.describe() == {"images": str(real), "follow_symlinks": False}


@pytest.mark.parametrize("many", [False, True])
def test_missing_lists_a_big_folder_once_and_agrees_with_a_stat_per_path(tmp_path: Path, many: bool) -> None:
    """``ImageFolder.missing``: the same answer whether the folder is listed (many names in it)
    or each path is stat'ed: a file, a link to a file (present), a folder named like an image,
    a dangling link and an absent name (missing), in the paths' order."""
    root = tmp_path / "images"
    names = [f"img_{k:03d}.png" for k in range(80 if many else 8)]
    for n in names:
        (root / n).parent.mkdir(parents=True, exist_ok=True)
        (root / n).write_bytes(b"x")
    (root / "as_dir.png").mkdir()
    os.symlink(root / names[0], root / "link.png")
    os.symlink(root / "nowhere.png", root / "dangling.png")
    folder = ImageFolder(root)
    asked = [folder.file(n) for n in ["absent.png", *names, "as_dir.png", "link.png", "dangling.png", "sub/absent.png"]]
    expected = [p for p in asked if not os.path.isfile(p)]
    assert folder.missing(asked) == expected
    assert [os.path.basename(p) for p in expected] == ["absent.png", "as_dir.png", "dangling.png", "absent.png"]
    assert folder.path(names[1]) == Path(folder.file(names[1]))


def test_follow_symlinks_follows_links_but_keeps_the_name_rules(tmp_path: Path, secret: Path) -> None:
    store = tmp_path / "store"
    _png(store / "x.png")
    _png(store / "deep" / "y.png")
    farm = tmp_path / "farm"
    farm.mkdir()
    (farm / "x.png").symlink_to(store / "x.png")
    (farm / "deep").symlink_to(store / "deep")
    strict, follow = ImageFolder(farm), ImageFolder(farm, follow_symlinks=True)
    for name in ("x.png", "deep/y.png"):
        with pytest.raises(FormatError, match="through a symlink"):
            strict.path(name)
        assert follow.path(name) == farm.resolve() / name and follow.path(name).is_file()
    # '..' is resolved on the text, never through a link: deep/../x.png is the farm's x.png, not
    # store/x.png reached through deep's target
    assert follow.path("deep/../x.png") == farm.resolve() / "x.png"
    for name in ("../secret.png", "deep/../../secret.png", str(secret), "C:\\x.png", "x\x00.png"):
        with pytest.raises(FormatError):
            follow.path(name)
    assert follow.describe() == {"images": str(farm.resolve()), "follow_symlinks": True}


# --------------------------------------------------------------------------------- mcq run
def _question(k: int, name: str) -> MCQuestion:
    return MCQuestion(id=f"q{k}", file_name=name, setting=1,
                      choices=(Choice("hold a/an cup"), Choice("ride a/an horse"), Choice("eat a/an apple")),
                      correct=frozenset({0}))


@pytest.fixture
def run_images(tmp_path: Path) -> Path:
    images = tmp_path / "images"
    for k, rel in enumerate(("im0.png", "im1.png", "sub/im2.png")):
        _png(images / rel, (40 * k, 90, 200))
    return images


GOOD = ["im0.png", "./im1.png", "sub/im2.png", "sub/../im1.png"]


def _mcq_run(qpath: Path, images: Path, url: str, out: Path, *extra: str) -> list[str]:
    return ["mcq", "run", "--questions", str(qpath), "--images", str(images), "--model", "Qwen/Qwen2.5-VL-7B-Instruct",
            "--base-url", url, "--out", str(out), "--no-progress", "--json", "--max-retries", "0", *extra]


def _exit(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


@pytest.mark.parametrize("case", sorted(BAD))
def test_mcq_run_refuses_a_bad_name_before_any_request(tmp_path: Path, run_images: Path, secret: Path,
                                                       capsys: pytest.CaptureFixture[str], case: str) -> None:
    make, problem = BAD[case]
    name = make(tmp_path, run_images)
    qpath = tmp_path / "q.jsonl"
    write_questions(qpath, [_question(k, n) for k, n in enumerate([*GOOD, name])], header={"seed": 0})
    out = tmp_path / "answers.jsonl"
    with FakeChatServer(lambda body: "A") as server:
        code, _, err = _exit(_mcq_run(qpath, run_images, server.url, out), capsys)
        assert server.count == 0
    assert code == 2
    _one_line_error(err, f"{qpath}: record 'q{len(GOOD)}': file_name: ", repr(name), problem)
    assert not out.exists()


def test_mcq_run_sends_names_inside_and_records_the_folder(tmp_path: Path, run_images: Path,
                                                          capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    qpath = tmp_path / "q.jsonl"
    write_questions(qpath, [_question(k, n) for k, n in enumerate(GOOD)], header={"seed": 0})
    out = tmp_path / "answers.jsonl"
    seen: list[bytes] = []

    def handler(body: dict) -> str:
        seen.append(request_image(body) or b"")
        return "A"

    with FakeChatServer(handler) as server:
        main(_mcq_run(qpath, run_images, server.url, out))
        assert json.loads(capsys.readouterr().out)["ok"] == len(GOOD) and server.count == len(GOOD)
        assert all(img[:4] == b"\x89PNG" for img in seen)
        header = read_answers(out).header
        assert header["images"] == str(run_images.resolve()) and header["follow_symlinks"] is False
        # the same folder spelt another way (relative, through a link) is the same folder: resumed
        monkeypatch.chdir(tmp_path)
        (tmp_path / "via").symlink_to(run_images)
        for spelling in ("images", "via"):
            main(_mcq_run(qpath, Path(spelling), server.url, out))
            assert json.loads(capsys.readouterr().out)["resumed"] == len(GOOD)
        assert server.count == len(GOOD)
        # a moved folder is another folder: refused with what to do, then --overwrite costs nothing
        moved = run_images.rename(tmp_path / "moved")
        code, _, err = _exit(_mcq_run(qpath, moved, server.url, out), capsys)
        assert code == 2
        _one_line_error(err, "other settings (images: ", str(moved), "--overwrite", "keyed by image content")
        main(_mcq_run(qpath, moved, server.url, out, "--overwrite"))
        summary = json.loads(capsys.readouterr().out)
        assert summary["cache_hits"] == len(GOOD) and summary["requests"] == 0 and server.count == len(GOOD)
        assert read_answers(out).header["images"] == str(moved)


def test_mcq_run_link_farm_needs_follow_symlinks(tmp_path: Path, run_images: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    farm = tmp_path / "farm"
    (farm / "sub").mkdir(parents=True)
    for rel in ("im0.png", "im1.png", "sub/im2.png"):
        (farm / rel).symlink_to(run_images / rel)
    qpath = tmp_path / "q.jsonl"
    write_questions(qpath, [_question(k, n) for k, n in enumerate(GOOD)], header={"seed": 0})
    out = tmp_path / "answers.jsonl"
    with FakeChatServer(lambda body: "A") as server:
        code, _, err = _exit(_mcq_run(qpath, farm, server.url, out), capsys)
        assert code == 2 and server.count == 0
        _one_line_error(err, f"{qpath}: record 'q0': file_name: 'im0.png' leads out", "--follow-symlinks")
        main(_mcq_run(qpath, farm, server.url, out, "--follow-symlinks"))
        assert json.loads(capsys.readouterr().out)["ok"] == len(GOOD) and server.count == len(GOOD)
        assert read_answers(out).header["follow_symlinks"] is True
        # '..' above the farm stays refused with --follow-symlinks
        write_questions(qpath, [_question(0, "sub/../../images/im0.png")], header={"seed": 0})
        code, _, err = _exit(_mcq_run(qpath, farm, server.url, tmp_path / "b.jsonl", "--follow-symlinks"), capsys)
        assert code == 2 and server.count == len(GOOD) and "climbs out" in err


# ------------------------------------------------------------------------- mcq build --judge
ANNOTATIONS = FIXTURES / "mini_instances_test2015.json"


def _judge_world(tmp_path: Path, folder: Path, *, last: Callable[[Path], str] | None = None) -> Path:
    """The fixture annotations with every image under ``folder``; ``last`` renames the last one."""
    data = json.loads(ANNOTATIONS.read_text())
    for name in data["filenames"]:
        _png(folder / name)
    if last is not None:
        data["filenames"][-1] = last(folder)
    path = tmp_path / "instances.json"
    path.write_text(json.dumps(data))
    return path


def _build(ann: Path, images: Path, url: str, out: Path, *extra: str) -> list[str]:
    return ["mcq", "build", "--dataset", str(ann), "--no-redistribute", "--no-remove-easy", "--settings", "1,2",
            "--judge", "openai:judge", "--judge-base-url", url, "--images", str(images), "--out", str(out), *extra]


@pytest.mark.parametrize("case", sorted(BAD))
def test_mcq_build_judges_refuse_a_bad_name_before_any_request(tmp_path: Path, secret: Path,
                                                              capsys: pytest.CaptureFixture[str], case: str) -> None:
    make, problem = BAD[case]
    images = tmp_path / "images"
    ann = _judge_world(tmp_path, images, last=lambda folder: make(tmp_path, folder))
    filenames = json.loads(ann.read_text())["filenames"]
    last, name = len(filenames) - 1, filenames[-1]
    out = tmp_path / "q.jsonl"
    with FakeChatServer(lambda body: "No") as server:
        code, _, err = _exit(_build(ann, images, server.url, out), capsys)
        assert server.count == 0
    assert code == 2
    _one_line_error(err, f"{ann}: record {last}: file_name: ", repr(name), problem)
    assert not out.exists()


def test_mcq_build_judges_see_images_inside_and_a_link_farm_with_follow_symlinks(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "store"
    ann = _judge_world(tmp_path, store)
    farm = tmp_path / "farm"
    farm.mkdir()
    for p in store.iterdir():
        (farm / p.name).symlink_to(p)
    out = tmp_path / "q.jsonl"
    with FakeChatServer(lambda body: "No") as server:
        code, _, err = _exit(_build(ann, farm, server.url, out), capsys)
        assert code == 2 and server.count == 0
        _one_line_error(err, f"{ann}: record 0: file_name: ", "through a symlink", "--follow-symlinks")
        main(_build(ann, farm, server.url, out, "--follow-symlinks"))
        assert server.count > 0 and out.exists()
        capsys.readouterr()
        main(_build(ann, store, server.url, tmp_path / "q2.jsonl"))  # a plain folder, no flag
        assert (tmp_path / "q2.jsonl").read_bytes() == out.read_bytes()
    code, _, err = _exit(["mcq", "build", "--dataset", str(ann), "--follow-symlinks", "--out", str(out)], capsys)
    assert code == 2 and "--follow-symlinks has no effect without --judge" in err


def test_negative_filter_checks_every_judged_name_before_asking() -> None:
    judge = ScriptedBackend(lambda req: "no", model="j")
    nf = NegativeFilter(first=judge, image_root="/images")
    with pytest.raises(FormatError, match=r"'\.\./x\.png' climbs out"):
        nf.keep([("a.png", "ride a/an horse", None), ("../x.png", "hold a/an cup", None)])
    assert judge.calls == []
    assert nf.keep([("a.png", "ride a/an horse", None)]) == [True]
    assert judge.calls[0].messages[0].parts[0].path == "/images/a.png"


# ------------------------------------------------------------------------------ augment run
def _augment_world(tmp_path: Path, url: str) -> tuple[Path, Path, Path, Path]:
    """A PPDM dataset file of real images, a deficits file asking for ride-horse, and a config
    whose chat stages talk to ``url`` (the generator is never loaded when a name is refused)."""
    images = tmp_path / "real"
    ds = real_dataset(images, {RIDE_HORSE: 3, HOLD_CUP: 2})
    ann = tmp_path / "real.json"
    write_ppdm(ds, ann)
    v, o = (int(x) for x in VOCAB.hoi_verb_object[RIDE_HORSE])
    deficits = tmp_path / "deficits.json"
    deficits.write_text(json.dumps({"kind": "balanced_deficits", "l_train": 4, "l_test": 1, "seed": 0, "classes": [
        {"hoi": RIDE_HORSE, "name": VOCAB.hoi_name(RIDE_HORSE), "verb": v, "object": o, "split": "train",
         "have": 3, "need": 4, "deficit": 1}]}))
    stage = f"{{kind: openai, model: fake-model, options: {{base_urls: ['{url}'], max_retries: 0}}}}"
    cfg = tmp_path / "c.yaml"
    cfg.write_text("generator: {kind: tiny, steps: 1, width: 32, height: 32}\ndetector: {kind: fake}\n"
                   f"pseudo_label_verbs: target\ndescribe_vlm: {stage}\nregion_vlm: {stage}\nllm: {stage}\n")
    return ann, deficits, images, cfg


def _augment_run(ann: Path, deficits: Path, images: Path, cfg: Path, out: Path, *extra: str) -> list[str]:
    return ["augment", "run", "--deficits", str(deficits), "--dataset", str(ann), "--images", str(images),
            "--out", str(out), "--config", str(cfg), "--no-progress", *extra]


@pytest.mark.parametrize("case", sorted(BAD))
def test_augment_run_refuses_a_bad_reference_name_before_any_request(
        tmp_path: Path, secret: Path, capsys: pytest.CaptureFixture[str], case: str) -> None:
    make, problem = BAD[case]
    with FakeChatServer(lambda body: "Yes") as server:
        ann, deficits, images, cfg = _augment_world(tmp_path, server.url)
        data = json.loads(ann.read_text())
        last = 2  # the last ride-horse image (the first three images are the class's)
        (images / data[last]["file_name"]).unlink()
        name = make(tmp_path, images)
        data[last]["file_name"] = name
        ann.write_text(json.dumps(data))
        out = tmp_path / "aug"
        code, _, err = _exit(_augment_run(ann, deficits, images, cfg, out), capsys)
        assert server.count == 0
    assert code == 2
    _one_line_error(err, f"{ann}: record {last}: file_name: ", repr(name), problem)
    assert not out.exists()


def test_augment_run_references_inside_and_a_link_farm_with_follow_symlinks(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("diffusers")
    with FakeChatServer(lambda body: "Yes") as server:
        ann, deficits, images, cfg = _augment_world(tmp_path, server.url)
        farm = tmp_path / "farm"
        (farm / "train2015").mkdir(parents=True)  # HICO-DET's layout, linked in
        for p in images.iterdir():
            (farm / "train2015" / p.name).symlink_to(p)
        code, _, err = _exit(_augment_run(ann, deficits, farm, cfg, tmp_path / "a"), capsys)
        assert code == 2 and server.count == 0 and "through a symlink" in err
        main(_augment_run(ann, deficits, farm, cfg, tmp_path / "a", "--follow-symlinks"))
        capsys.readouterr()
        assert server.count > 0
        run = json.loads((tmp_path / "a" / "run.json").read_text())
        assert run["images"] == str(farm.resolve()) and run["follow_symlinks"] is True
        references = [json.loads(line)["reference"] for line in (tmp_path / "a" / "manifest.jsonl").open()
                      if json.loads(line)["event"] == "describe"]
        assert references and all(r.startswith("real_") for r in references)


def test_augment_library_checks_every_reference_of_the_shard_first(tmp_path: Path) -> None:
    images = tmp_path / "real"
    ds = real_dataset(images, {RIDE_HORSE: 2, HOLD_CUP: 2})
    # subfolders are fine; move one image into one and name it so
    (images / "sub").mkdir()
    os.replace(images / ds.file_names[1], images / "sub" / ds.file_names[1])
    write_ppdm(ds, tmp_path / "real.json")
    data = json.loads((tmp_path / "real.json").read_text())
    data[1]["file_name"] = f"sub/{data[1]['file_name']}"
    data[3]["file_name"] = "../outside.png"  # a hold-cup image
    (tmp_path / "real.json").write_text(json.dumps(data))
    named = read_ppdm(tmp_path / "real.json")
    ride, cup = TargetClass.of(VOCAB, RIDE_HORSE, 2), TargetClass.of(VOCAB, HOLD_CUP, 1)
    check_reference_images([ride], dataset=named, images_dir=images)  # ride-horse references only
    script = Script()
    p = pipeline(SolidGenerator(), script)
    with pytest.raises(FormatError, match=r"real.json: record 3: file_name: '\.\./outside\.png' climbs out"):
        augment_deficits([ride, cup], vocab=VOCAB, out_dir=tmp_path / "o", pipeline=p, dataset=named,
                         images_dir=images)
    assert all(not b.calls for b in (p.chat.describe_vlm, p.chat.region_vlm, p.chat.llm))
    assert not (tmp_path / "o").exists()
    res = augment_deficits([ride], vocab=VOCAB, out_dir=tmp_path / "o", pipeline=p, dataset=named,
                           images_dir=images)
    assert res.classes[0]["filled"] == 2
    refs = {r["reference"] for r in read_manifests(tmp_path / "o") if r["event"] == "describe"}
    assert refs == {named.file_names[0], f"sub/{ds.file_names[1]}"}
    assert {Path(str(c.messages[0].parts[0].path)) for c in p.chat.describe_vlm.calls} == {
        images.resolve() / named.file_names[0], images.resolve() / "sub" / ds.file_names[1]}


# --------------------------------------------------------------------------- augment filter
def test_augment_filter_refuses_a_crawled_link_out_and_follows_a_farm_on_request(
        tmp_path: Path, secret: Path) -> None:
    crawled = tmp_path / "crawled"
    _png(crawled / "c0.png")
    (crawled / "c1.png").symlink_to(secret)
    items = [(crawled / n, TargetClass.of(VOCAB, RIDE_HORSE, 0)) for n in ("c0.png", "c1.png")]
    p = pipeline(None, Script())
    with pytest.raises(FormatError, match=r"c1.png: 'c1.png' leads out of the images folder .* through a symlink"):
        filter_images(items, vocab=VOCAB, images_root=crawled, out_dir=tmp_path / "o", pipeline=p)
    assert all(not b.calls for b in (p.chat.region_vlm, p.chat.llm)) and not (tmp_path / "o").exists()
    res = filter_images(items, vocab=VOCAB, images_root=crawled, out_dir=tmp_path / "o", pipeline=p,
                        follow_symlinks=True)
    assert res.dataset.file_names == ("c0.png", "c1.png")
    with pytest.raises(FormatError, match="climbs out"):
        filter_images([(secret, items[0][1])], vocab=VOCAB, images_root=crawled, out_dir=tmp_path / "o2",
                      pipeline=p, follow_symlinks=True)


def test_cli_augment_filter_crawls_a_link_farm_only_with_follow_symlinks(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "store"
    for k in range(2):
        _png(store / f"c{k}.png", (k, 0, 0))
    crawled = tmp_path / "crawled"
    crawled.mkdir()
    (crawled / str(RIDE_HORSE)).symlink_to(store)  # a class folder linked in
    (crawled / str(RIDE_HORSE) / "loop").symlink_to(crawled)  # a cycle: the crawl must end
    cfg = tmp_path / "c.yaml"
    cfg.write_text("detector: {kind: fake}\npseudo_label_verbs: target\n"
                   "region_vlm: {kind: constant, reply: 'Yes.'}\nllm: {kind: constant, reply: 'yes'}\n")
    args = ["augment", "filter", "--images", str(crawled), "--config", str(cfg), "--no-progress"]
    code, _, err = _exit([*args, "--out", str(tmp_path / "o")], capsys)
    assert code == 2
    _one_line_error(err, f"'{RIDE_HORSE}/c0.png' leads out of the images folder", "--follow-symlinks")
    main([*args, "--out", str(tmp_path / "o"), "--follow-symlinks"])
    assert "2 images, 2 instances" in capsys.readouterr().out
