"""B-RIGHT Figures S3 and S2: image embedders behind one interface (a tiny random CLIP, DreamSim
through a stand-in of its package), the t-SNE of real vs generated images
(``hoibench analyze embeddings``), the packaged prompt-ablation configs and the side-by-side
figure of two augmentation runs (``hoibench analyze prompt-ablation``). No weights downloaded."""

from __future__ import annotations

import csv
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from PIL import Image

from hoibench._exceptions import ConfigError, MissingExtraError
from hoibench.augment import AugmentConfig, TargetClass, augment_deficits, load_config
from hoibench.cli import cli, main
from tests.test_augment_helpers import (
    HOLD_CUP,
    RIDE_HORSE,
    VOCAB,
    Script,
    SolidGenerator,
    pipeline,
    real_dataset,
)

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

PNG = b"\x89PNG\r\n\x1a\n"


def _cli(args: list[str]) -> tuple[int, str]:
    res = CliRunner().invoke(cli, args, catch_exceptions=True)
    return res.exit_code, res.output + ("" if res.exception is None else repr(res.exception))


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


class _TinyDreamSim(torch.nn.Module):
    """Stands in for the model ``dreamsim.dreamsim`` returns: ``embed`` of a preprocessed batch."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.proj = torch.nn.Linear(3 * 8 * 8, 12)

    def embed(self, img: Any) -> Any:
        return self.proj(img.flatten(1))


@pytest.fixture
def fake_dreamsim(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """A ``dreamsim`` module with the package's entry point, ``dreamsim(pretrained, device,
    cache_dir, dreamsim_type) -> (model, preprocess)``; records its calls."""
    calls: list[dict[str, Any]] = []

    def dreamsim(pretrained: bool = True, device: str = "cuda", cache_dir: str = "./models",
                 normalize_embeds: bool = True, dreamsim_type: str = "ensemble") -> tuple[Any, Any]:
        calls.append({"pretrained": pretrained, "device": device, "cache_dir": cache_dir,
                      "dreamsim_type": dreamsim_type})

        def preprocess(im: Image.Image) -> Any:
            a = np.asarray(im.convert("RGB").resize((8, 8)), dtype=np.float32) / 255.0
            return torch.from_numpy(a).permute(2, 0, 1).unsqueeze(0)

        return _TinyDreamSim().eval(), preprocess

    monkeypatch.setitem(sys.modules, "dreamsim", types.SimpleNamespace(dreamsim=dreamsim))
    return calls


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from hoibench.testing import save_tiny_clip

    return save_tiny_clip(tmp_path_factory.mktemp("clip") / "tiny-clip")


def _images(n: int, seed: int) -> list[Image.Image]:
    rng = np.random.default_rng(seed)
    return [Image.fromarray(rng.integers(0, 255, (24 + k, 30, 3), dtype=np.uint8)) for k in range(n)]


# --------------------------------------------------------------------------------- embedders
def test_clip_embedder_on_a_tiny_checkpoint(tiny_clip: Path) -> None:
    from hoibench.models import ClipEmbedder, ImageEmbedder

    e = ClipEmbedder.from_pretrained(str(tiny_clip), device="cpu")
    assert isinstance(e, ImageEmbedder)
    ims = _images(3, 0)
    x = e.embed(ims)
    assert x.shape == (3, 16) and x.dtype == np.float32 and np.isfinite(x).all()
    # one image at a time gives the same vectors (no batch effect), different images differ
    np.testing.assert_allclose(np.concatenate([e.embed([im]) for im in ims]), x, rtol=1e-4, atol=1e-5)
    assert not np.allclose(x[0], x[1])
    assert e.embed([]).shape == (0, 16)


def test_dreamsim_embedder_calls_the_package(fake_dreamsim: list[dict[str, Any]], tmp_path: Path) -> None:
    from hoibench.models import DreamSimEmbedder, ImageEmbedder

    e = DreamSimEmbedder.from_pretrained(str(tmp_path / "w"), dreamsim_type="dino_vitb16", device="cpu")
    assert isinstance(e, ImageEmbedder) and e.name == "dreamsim-dino_vitb16"
    assert fake_dreamsim == [{"pretrained": True, "device": "cpu", "cache_dir": str(tmp_path / "w"),
                              "dreamsim_type": "dino_vitb16"}]
    x = e.embed(_images(4, 1))
    assert x.shape == (4, 12) and x.dtype == np.float32


def test_dreamsim_without_its_package_names_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from hoibench.models import ClipEmbedder, DreamSimEmbedder

    monkeypatch.setitem(sys.modules, "dreamsim", None)  # import dreamsim raises ImportError
    with pytest.raises(MissingExtraError, match=r"pip install 'hoibench\[dreamsim\]'"):
        DreamSimEmbedder.from_pretrained(str(tmp_path))
    real, gen = tmp_path / "real", tmp_path / "gen"
    for folder, seed in ((real, 0), (gen, 1)):
        folder.mkdir()
        for k, im in enumerate(_images(3, seed)):
            im.save(folder / f"{k}.png")
    def no_clip(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("CLIP loaded before the missing DreamSim package was refused")

    monkeypatch.setattr(ClipEmbedder, "from_pretrained", no_clip)
    with pytest.raises(SystemExit) as exc:  # both models (the default): DreamSim is checked first
        main(["analyze", "embeddings", str(real), str(gen), "--out", str(tmp_path / "o"), "--no-progress"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "error: dreamsim is needed for DreamSim embeddings: pip install 'hoibench[dreamsim]'" in err


# --------------------------------------------------------------------------------- t-SNE
class _ClusterEmbedder:
    """Images whose red channel is high map near one point, the others near another."""

    name = "clusters"

    def embed(self, images: list[Image.Image]) -> np.ndarray:
        red = np.array([np.asarray(im)[..., 0].mean() > 127 for im in images], dtype=np.float64)
        rng = np.random.default_rng(len(images))
        return (np.outer(red, np.full(8, 10.0)) + rng.normal(0, 0.1, (len(images), 8))).astype(np.float32)


def test_embedding_tsne_keeps_separate_groups_apart_and_is_seeded(tmp_path: Path) -> None:
    from hoibench.analysis import embedding_tsne

    paths = {"real": [], "generated": []}
    for g, color in (("real", (250, 0, 0)), ("generated", (0, 0, 250))):
        for k in range(6):
            p = tmp_path / f"{g}{k}.png"
            Image.new("RGB", (10, 10), (color[0] - k, k, color[2] - k)).save(p)
            paths[g].append(p)
    m = embedding_tsne(paths, [_ClusterEmbedder()], seed=3, batch_size=5)
    xy = m.coords["clusters"]
    assert xy.shape == (12, 2) and m.perplexity == pytest.approx(11 / 3)
    labels = np.array(m.groups)
    d = np.linalg.norm(xy[:, None] - xy[None], axis=-1) + np.eye(12) * 1e9
    assert (labels[d.argmin(1)] == labels).all()  # each image's nearest neighbour is of its group
    again = embedding_tsne(paths, [_ClusterEmbedder()], seed=3, batch_size=5)
    np.testing.assert_array_equal(again.coords["clusters"], xy)
    with pytest.raises(ConfigError, match="no images in group\\(s\\) 'generated'"):
        embedding_tsne({"real": paths["real"], "generated": []}, [_ClusterEmbedder()])


def _augment_run(out: Path, *, images: Path | None, real: Any, script: Script | None = None,
                 needs: tuple[tuple[int, int], ...] = ((RIDE_HORSE, 2), (HOLD_CUP, 2)),
                 max_attempts: int = 10) -> Path:
    targets = [TargetClass.of(VOCAB, h, n) for h, n in needs]
    cfg = AugmentConfig(pseudo_label_verbs="target", max_attempts=max_attempts)
    kw: dict[str, Any] = {"dataset": real, "images_dir": images} if images is not None else {}
    augment_deficits(targets, vocab=VOCAB, out_dir=out, pipeline=pipeline(SolidGenerator(), script or Script(), cfg),
                     **kw)
    return out


def test_embeddings_cli_writes_two_panels_and_the_coordinates(tmp_path: Path, tiny_clip: Path,
                                                              fake_dreamsim: list[dict[str, Any]]) -> None:
    real = real_dataset(tmp_path / "real", {RIDE_HORSE: 5, HOLD_CUP: 5})  # 10 real images
    run = _augment_run(tmp_path / "aug", images=None, real=real)  # 4 kept generated images
    args = ["analyze", "embeddings", str(tmp_path / "real"), str(run), "--clip", str(tiny_clip),
            "--dreamsim", str(tmp_path / "w"), "--device", "cpu", "--out", str(tmp_path / "o")]
    code, out = _cli(args)
    assert code == 0, out
    png = (tmp_path / "o" / "embedding-tsne.png").read_bytes()
    assert png.startswith(PNG)
    w, h = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert w > 1.8 * h  # two panels side by side
    rows = _rows(tmp_path / "o" / "embedding-tsne.csv")
    spaces = {r["space"] for r in rows}
    assert spaces == {"CLIP (tiny-clip)", "DreamSim (ensemble)"}  # a local model by its folder name
    for s in spaces:
        mine = [r for r in rows if r["space"] == s]
        # as many real images as generated ones (a seeded sample), the kept images of the run
        assert sorted(r["group"] for r in mine) == ["generated"] * 4 + ["real"] * 4
        assert {Path(r["image"]).name for r in mine if r["group"] == "generated"} == {
            f"aug_h{h:03d}_a{a:04d}.png" for h in (RIDE_HORSE, HOLD_CUP) for a in (0, 1)}
        assert all(np.isfinite([float(r["x"]), float(r["y"])]).all() for r in mine)
    assert fake_dreamsim[0]["cache_dir"] == str(tmp_path / "w")
    # --all-real embeds every real image; --names names the groups
    code, out = _cli([*args[:-1], str(tmp_path / "o2"), "--all-real", "--models", "clip", "--names", "HICO-DET,B-RIGHT"])
    assert code == 0, out
    rows = _rows(tmp_path / "o2" / "embedding-tsne.csv")
    assert sum(r["group"] == "HICO-DET" for r in rows) == 10 and sum(r["group"] == "B-RIGHT" for r in rows) == 4
    assert len({r["space"] for r in rows}) == 1


def test_embeddings_cli_refusals_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "gen").mkdir()
    Image.new("RGB", (8, 8)).save(tmp_path / "gen" / "a.png")
    for argv, message in (
        ([str(tmp_path / "real"), str(tmp_path / "gen"), "--models", "clip,vgg"],
         "--models 'clip,vgg': choose from clip, dreamsim"),
        ([str(tmp_path / "real"), str(tmp_path / "gen"), "--models", "clip"],
         f"{tmp_path / 'real'}: no images (.jpg, .jpeg, .png, .webp, .bmp) under it"),
        ([str(tmp_path / "real"), str(tmp_path / "gen"), "--names", "a,a"],
         "--names 'a,a': two different names, comma-separated"),
    ):
        with pytest.raises(SystemExit) as exc:
            main(["analyze", "embeddings", *argv, "--out", str(tmp_path / "o")])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err
    (tmp_path / "real" / "bad.png").write_bytes(b"not an image")
    with pytest.raises(SystemExit):
        main(["analyze", "embeddings", str(tmp_path / "real"), str(tmp_path / "gen"), "--models", "clip",
              "--clip", str(tmp_path / "no-such-model"), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ")


# ------------------------------------------------------------------------ prompt ablation
def test_packaged_ablation_configs_differ_only_in_the_prompt() -> None:
    basic, desc = load_config("ablation-basic"), load_config("ablation-description")
    fa, fb = basic.fingerprint(), desc.fingerprint()
    assert [k for k in fa if fa[k] != fb[k]] == ["describe_vlm"]
    for cfg in (basic, desc):
        assert cfg.generator.kind == "sdxl_lightning"  # the paper's generator
        assert cfg.detector.kind == "fake"  # no filtering: every image is kept
        assert (cfg.region_vlm.kind, cfg.region_vlm.reply, cfg.llm.kind, cfg.llm.reply) == (
            "constant", "Yes", "constant", "Yes")
    assert desc.describe_vlm.kind == "openai" and desc.describe_vlm.model


def test_prompt_ablation_cli_shows_two_runs_side_by_side(tmp_path: Path) -> None:
    real = real_dataset(tmp_path / "real", {RIDE_HORSE: 3, HOLD_CUP: 3})
    basic = _augment_run(tmp_path / "basic", images=None, real=real)
    desc = _augment_run(tmp_path / "desc", images=tmp_path / "real", real=real,
                        needs=((RIDE_HORSE, 2), (HOLD_CUP, 2)))
    code, out = _cli(["analyze", "prompt-ablation", str(basic), str(desc), "--out", str(tmp_path / "o")])
    assert code == 0, out
    assert "2 classes × 2 runs (basic: basic prompt, desc: description prompt)" in out
    png = (tmp_path / "o" / "prompt-ablation.png").read_bytes()
    assert png.startswith(PNG)
    rows = _rows(tmp_path / "o" / "prompt-ablation.csv")
    assert [(int(r["hoi"]), r["run"]) for r in rows] == [
        (min(RIDE_HORSE, HOLD_CUP), "basic: basic prompt"), (min(RIDE_HORSE, HOLD_CUP), "desc: description prompt"),
        (max(RIDE_HORSE, HOLD_CUP), "basic: basic prompt"), (max(RIDE_HORSE, HOLD_CUP), "desc: description prompt")]
    by = {(int(r["hoi"]), r["run"].split(":")[0]): r for r in rows}
    assert by[RIDE_HORSE, "basic"]["prompt"] == "A photo of a person riding a horse"
    assert by[RIDE_HORSE, "desc"]["prompt"].startswith("A photo of a person riding a horse, in a sunny field like real_")
    assert by[HOLD_CUP, "basic"]["class"] == "hold cup"
    assert all(r["attempt"] == "0" and r["status"] == "kept" for r in rows)
    assert Path(by[RIDE_HORSE, "desc"]["image"]).is_file()
    # labels given, two images per class, one class
    code, out = _cli(["analyze", "prompt-ablation", f"(a)={basic}", f"(b)={desc}", "--per-class", "2",
                      "--classes", str(HOLD_CUP), "--out", str(tmp_path / "o2")])
    assert code == 0, out
    rows = _rows(tmp_path / "o2" / "prompt-ablation.csv")
    assert [(r["run"], r["attempt"]) for r in rows] == [("(a)", "0"), ("(a)", "1"), ("(b)", "0"), ("(b)", "1")]
    assert (tmp_path / "o2" / "prompt-ablation.png").read_bytes().startswith(PNG)


def test_prompt_ablation_kept_only_skips_rejected_images(tmp_path: Path) -> None:
    real = real_dataset(tmp_path / "real", {RIDE_HORSE: 2})
    a = _augment_run(tmp_path / "a", images=None, real=real, needs=((RIDE_HORSE, 1),))
    # the filtered run's first attempt is rejected, its paraphrase kept
    c = _augment_run(tmp_path / "c", images=None, real=real, needs=((RIDE_HORSE, 1),),
                     script=Script(reject={(RIDE_HORSE, 0)}))
    code, out = _cli(["analyze", "prompt-ablation", f"a={a}", f"c={c}", "--out", str(tmp_path / "o")])
    assert code == 0, out
    rows = {r["run"]: r for r in _rows(tmp_path / "o" / "prompt-ablation.csv")}
    assert rows["c"]["status"] == "rejected" and rows["c"]["attempt"] == "0"
    code, out = _cli(["analyze", "prompt-ablation", f"a={a}", f"c={c}", "--kept-only", "--out", str(tmp_path / "o")])
    assert code == 0, out
    rows = {r["run"]: r for r in _rows(tmp_path / "o" / "prompt-ablation.csv")}
    assert (rows["c"]["status"], rows["c"]["attempt"]) == ("kept", "1")
    assert rows["c"]["prompt"] == "A photo of a person riding a horse (reworded)"


def test_prompt_ablation_refusals_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    real = real_dataset(tmp_path / "real", {RIDE_HORSE: 2, HOLD_CUP: 2})
    a = _augment_run(tmp_path / "a", images=None, real=real, needs=((RIDE_HORSE, 1),))
    b = _augment_run(tmp_path / "b", images=None, real=real, needs=((HOLD_CUP, 1),))
    (tmp_path / "empty").mkdir()
    for argv, message in (
        ([str(a)], "a prompt ablation compares at least two augmentation runs"),
        ([str(a), str(b)], "the runs have no class in common"),
        ([str(a), str(tmp_path / "empty")], f"{tmp_path / 'empty'}: not an augmentation output folder (no run.json)"),
        ([f"x={a}", f"x={a}"], "two runs are labelled 'x'"),
        ([str(a), f"again={a}", "--classes", str(HOLD_CUP)], f"classes [{HOLD_CUP}] have no generated image in every run"),
    ):
        with pytest.raises(SystemExit) as exc:
            main(["analyze", "prompt-ablation", *argv, "--out", str(tmp_path / "o")])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err
