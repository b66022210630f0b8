"""A user's first ``augment run``: without reference images, after a first start that failed,
with the tiny generator and the packaged dry-run config, and what it shows while it works."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hoibench._exceptions import ConfigError
from hoibench.augment import (
    AugmentConfig,
    GeneratorConfig,
    StageError,
    TargetClass,
    augment_deficits,
    load_config,
    read_manifests,
)
from hoibench.augment import _pipeline as pipeline_mod
from hoibench.cli import cli
from hoibench.formats import write_ppdm
from hoibench.models import ScriptedBackend
from tests.test_augment import _deficits_file, _row
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

#: stand-in models a config can name (the generator is swapped for a cheap one where it matters)
_CONFIG = ("generator: {kind: tiny}\ndetector: {kind: fake}\npseudo_label_verbs: target\n"
           "describe_vlm: {kind: constant, reply: 'at dawn', cache: null}\n"
           "region_vlm: {kind: constant, reply: 'Yes', cache: null}\n"
           "llm: {kind: constant, reply: 'Yes', cache: null}\n")


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, Path]:
    """A real dataset (annotation file and image folder), a deficits file of two classes, a config."""
    real = real_dataset(tmp_path / "real", {EAT_APPLE: 4, RIDE_HORSE: 2, HOLD_CUP: 2})
    write_ppdm(real, tmp_path / "real.json")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(_CONFIG)
    return {"dataset": tmp_path / "real.json", "images": tmp_path / "real", "config": cfg,
            "deficits": _deficits_file(tmp_path / "d.json", [_row(RIDE_HORSE, 2), _row(HOLD_CUP, 1)])}


def _run(inputs: dict[str, Path], out: Path, *extra: str, images: Path | None = None) -> tuple[int, str]:
    args = ["augment", "run", "--deficits", str(inputs["deficits"]), "--dataset", str(inputs["dataset"]),
            "--out", str(out), "--config", str(inputs["config"]), *extra]
    if images is not None:
        args += ["--images", str(images)]
    res = CliRunner().invoke(cli, args, catch_exceptions=True)
    return res.exit_code, res.output + ("" if res.exception is None else repr(res.exception))


class _Generators:
    """What ``augment run`` builds instead of the configured generator (the generator is not what
    these tests are about): a :class:`SolidGenerator`, one that crashes at once if ``crash``."""

    def __init__(self) -> None:
        self.built: list[SolidGenerator] = []
        self.crash = False

    def __call__(self, _cfg: GeneratorConfig) -> SolidGenerator:
        self.built.append(SolidGenerator(fail_after=0 if self.crash else None))
        return self.built[-1]


@pytest.fixture
def cheap_generator(monkeypatch: pytest.MonkeyPatch) -> _Generators:
    monkeypatch.delenv("FORCE_COLOR", raising=False)  # stderr is no terminal here: lines, no bar
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    gens = _Generators()
    monkeypatch.setattr(pipeline_mod, "build_generator", gens)
    return gens


# ------------------------------------------------------------------------ references optional
def test_run_without_images_prompts_from_text_and_records_it(tmp_path: Path, inputs, cheap_generator) -> None:
    # nothing describes a reference: the config needs no describe_vlm (the default names no model)
    inputs["config"].write_text("\n".join(line for line in _CONFIG.splitlines()
                                          if not line.startswith("describe_vlm")))
    code, out = _run(inputs, tmp_path / "aug", "--no-progress")
    assert code == 0, out
    assert "no --images: no reference retrieval; every prompt is the basic text prompt" in out
    assert "filled" in out and "unfilled" not in out
    describes = [r for r in read_manifests(tmp_path / "aug") if r["event"] == "describe"]
    assert len(describes) == 3
    assert all(r["reference"] is None and r["prompt_from"] == "basic"
               and r["no_reference"] == "no images folder given" for r in describes)
    assert {r["prompt"] for r in describes} == {"A photo of a person riding a horse",
                                                "A photo of a person holding a cup"}
    assert json.loads((tmp_path / "aug" / "run.json").read_text())["images"] is None


def test_references_record_where_the_prompt_came_from(tmp_path: Path, inputs, cheap_generator) -> None:
    code, out = _run(inputs, tmp_path / "aug", "--no-progress", images=inputs["images"])
    assert code == 0, out
    describes = [r for r in read_manifests(tmp_path / "aug") if r["event"] == "describe"]
    assert describes and all(r["prompt_from"] == "reference" and r["reference"].startswith("real_")
                             and "no_reference" not in r for r in describes)


def test_an_images_folder_without_any_reference_is_refused_before_anything(tmp_path: Path, inputs,
                                                                          cheap_generator) -> None:
    (tmp_path / "empty").mkdir()
    code, out = _run(inputs, tmp_path / "aug", images=tmp_path / "empty")
    assert code != 0
    assert "holds none of the 4 reference images of these classes" in out and "leave --images out" in out
    assert not (tmp_path / "aug").exists() and cheap_generator.built == []


# ----------------------------------------------------------------------- restart in place
def test_a_first_start_that_produced_nothing_restarts_in_place(tmp_path: Path, inputs, cheap_generator,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    out = tmp_path / "aug"
    cheap_generator.crash = True
    code, text = _run(inputs, out, "--no-progress", images=inputs["images"])
    assert code != 0 and "simulated crash" in text
    assert (out / "run.json").exists()  # the failed start left its folder: a description, no image
    assert [r["event"] for r in read_manifests(out)] == ["describe"]
    cheap_generator.crash = False
    with caplog.at_level("WARNING"):  # the CLI has no log handler: Python writes it to stderr
        code, text = _run(inputs, out, "--no-progress")  # corrected: no --images this time
    assert code == 0, text
    assert caplog.messages == [f"{out}: restarting in place with a different --images folder "
                               f"({inputs['images'].resolve()}, now none); its earlier run produced nothing"]
    run = json.loads((out / "run.json").read_text())
    assert run["images"] is None
    recs = read_manifests(out)  # the first start's description (from a reference) is gone
    assert all(r["reference"] is None for r in recs if r["event"] == "describe")
    assert len([r for r in recs if r["event"] == "attempt"]) == 3
    caplog.clear()
    code, text = _run(inputs, out, "--no-progress")  # the same command again: resumes, nothing new
    assert code == 0 and "restarting" not in caplog.text and cheap_generator.built[-1].calls == []


def test_a_folder_with_produced_work_still_refuses_naming_the_parameter(tmp_path: Path) -> None:
    targets = [TargetClass.of(VOCAB, RIDE_HORSE, 1)]
    out = tmp_path / "o"
    augment_deficits(targets, vocab=VOCAB, out_dir=out, pipeline=pipeline(SolidGenerator(), Script()))
    before = (out / "run.json").read_bytes()
    with pytest.raises(ConfigError) as exc:
        augment_deficits(targets, vocab=VOCAB, out_dir=out,
                         pipeline=pipeline(SolidGenerator(), Script(), AugmentConfig(seed=1)))
    assert str(exc.value) == (f"{out} holds the work (1 image with a verdict) of a run with a different "
                              "config.seed (0, now 1); use a new --out folder, or the same config.seed "
                              "to resume")
    assert (out / "run.json").read_bytes() == before
    assert (out / "images" / f"aug_h{RIDE_HORSE:03d}_a0000.png").is_file()
    with pytest.raises(ConfigError, match=r"different deficits \(classes\)\[0\]\[1\] \(1, now 2\)"):
        augment_deficits([TargetClass.of(VOCAB, RIDE_HORSE, 2)], vocab=VOCAB, out_dir=out,
                         pipeline=pipeline(SolidGenerator(), Script()))


def test_a_server_down_at_the_first_verdict_restarts_in_place(tmp_path: Path,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    """The first image was generated, its verification failed (the LLM server was not up): no
    verdict, so a start with other settings restarts; the image nobody verified goes."""
    targets = [TargetClass.of(VOCAB, RIDE_HORSE, 1)]
    out = tmp_path / "o"

    def down(_req: object) -> str:
        raise ConnectionError("connection refused")

    with pytest.raises(StageError, match="connection refused"):
        augment_deficits(targets, vocab=VOCAB, out_dir=out,
                         pipeline=pipeline(SolidGenerator(), Script(), llm=ScriptedBackend(down, model="llm")))
    assert [r["event"] for r in read_manifests(out)] == ["describe", "generated"]
    gen = SolidGenerator()
    with caplog.at_level("WARNING"):
        res = augment_deficits(targets, vocab=VOCAB, out_dir=out,
                               pipeline=pipeline(gen, Script(), AugmentConfig(seed=7)))
    assert caplog.messages == [f"{out}: restarting in place with a different config.seed (0, now 7); its "
                               "earlier run produced nothing (1 image never verified, removed)"]
    assert res.classes[0]["filled"] == 1 and json.loads((out / "run.json").read_text())["config"]["seed"] == 7
    seeds = {r["seed"] for r in read_manifests(out) if r["event"] == "generated"}
    assert seeds == {gen.calls[0][1]}  # only the new run's image is recorded


# ----------------------------------------------------------------------------- tiny generator
def test_tiny_generator_defaults_to_small_images_and_large_ones_are_explicit(tmp_path: Path) -> None:
    assert (GeneratorConfig(kind="tiny").width, GeneratorConfig(kind="tiny").height) == (64, 64)
    assert (GeneratorConfig().width, GeneratorConfig(kind="diffusers").height) == (1024, 1024)
    assert GeneratorConfig(kind="tiny", width=512, height=256).width == 512
    cfg = tmp_path / "c.yaml"
    cfg.write_text("generator: {kind: tiny}\n")
    loaded = load_config(cfg)
    assert (loaded.generator.width, loaded.generator.height) == (64, 64)
    assert loaded.fingerprint()["generator"]["width"] == 64  # the size a run used is recorded
    cfg.write_text("generator: {kind: tiny, height: 1024}\n")
    assert load_config(cfg).generator.height == 1024


def test_tiny_generator_makes_64_pixel_images() -> None:
    pytest.importorskip("diffusers")
    from hoibench.augment import build_generator

    image = build_generator(GeneratorConfig(kind="tiny", steps=1)).generate("a photo", seed=0)
    assert image.size == (64, 64)


# ---------------------------------------------------------------------------------- progress
def test_progress_lines_per_attempt_and_counts_per_stage(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)  # stderr is not a terminal here: lines, no bar
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    targets = [TargetClass.of(VOCAB, RIDE_HORSE, 1), TargetClass.of(VOCAB, HOLD_CUP, 2)]
    augment_deficits(targets, vocab=VOCAB, out_dir=tmp_path / "o", progress=True,
                     pipeline=pipeline(SolidGenerator(), Script(reject={(HOLD_CUP, 0)})))
    err = capsys.readouterr().err.splitlines()
    assert err[0] == ("augment: 2 classes, 3 instances to fill (0 filled before), at most 10 attempts "
                      "per class; no reference images: every prompt is the basic text prompt")
    assert err[1:5] == [
        "augment [1/3 instances] ride horse (class 1 of 2), attempt 1/10: kept, 1 instance",
        "augment [1/3 instances] hold cup (class 2 of 2), attempt 1/10: rejected: verification answered no",
        "augment [2/3 instances] hold cup (class 2 of 2), attempt 2/10: kept, 1 instance",
        "augment [3/3 instances] hold cup (class 2 of 2), attempt 3/10: kept, 1 instance"]
    assert err[5].startswith("augment: 3/3 instances; basic prompt 3, generated 4, inspected 4, "
                             "rejected at verify 1, kept 3, instances 3; ")
    augment_deficits(targets, vocab=VOCAB, out_dir=tmp_path / "o", progress=False,
                     pipeline=pipeline(SolidGenerator(), Script()))
    assert capsys.readouterr().err == ""  # --no-progress: silent


def test_cli_says_which_models_it_loads(tmp_path: Path, inputs, cheap_generator) -> None:
    code, out = _run(inputs, tmp_path / "aug")
    assert code == 0, out
    assert ("loading models: generator tiny random SDXL (64×64, 4 steps); detector fake; "
            "region_vlm constant, llm constant") in out
    assert "augment [3/3 instances] hold cup (class 2 of 2), attempt 1/10: kept, 1 instance" in out


# ---------------------------------------------------------------------------- dry-run config
def test_packaged_dry_run_config(tmp_path: Path) -> None:
    cfg = load_config("dry-run")
    assert (cfg.generator.kind, cfg.generator.width, cfg.generator.height) == ("tiny", 64, 64)
    assert cfg.detector.kind == "fake" and {cfg.describe_vlm.kind, cfg.region_vlm.kind, cfg.llm.kind} == {"constant"}
    with pytest.raises(ConfigError, match=r"dry-rn: neither a config file nor one of the packaged configs "
                       r"\['ablation-basic', 'ablation-description', 'dry-run'\]"):
        load_config("dry-rn")
    (tmp_path / "dry-run").write_text("seed: 3\n")  # a file of that name is the file
    assert load_config(tmp_path / "dry-run").seed == 3


def test_dry_run_config_end_to_end(tmp_path: Path, inputs) -> None:
    pytest.importorskip("diffusers")
    res = CliRunner().invoke(cli, ["augment", "run", "--deficits", str(inputs["deficits"]), "--dataset",
                                   str(inputs["dataset"]), "--out", str(tmp_path / "aug"), "--config",
                                   "dry-run", "--no-progress"], catch_exceptions=True)
    assert res.exit_code == 0, res.output + repr(res.exception)
    assert "3 images, 3 instances" in res.output and "unfilled" not in res.output
    run = json.loads((tmp_path / "aug" / "run.json").read_text())
    assert run["models"]["generator"]["width"] == 64 and run["models"]["generator"]["model"] == "tiny-random-sdxl"
