"""Cost of the augmentation pipeline's own bookkeeping, next to the models it drives.

    python perf/bench_augment.py [--classes 20] [--need 5] [--tiny]

With instant stand-ins for every model (a random-pixel generator, the fake detector, scripted
VLM/LLM answers), the run's time is all bookkeeping: retrieval, prompt filling, PNG encoding,
atomic image writes, fsync'ed manifest records, state rebuild and the final dataset files.
Printed, each measured in this run:

* the full run (``augment_deficits``) per attempt;
* the baseline: the same stage calls in a bare loop (no manifest, no files, no resume);
* a resume of the finished run (state rebuilt from the manifest, nothing to do);
* with ``--tiny``: one 64×64 image of the tiny random SDXL on the CPU, for scale (a real
  SDXL-Lightning 4-step 1024² image takes about a second on a data-centre GPU).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hoibench.augment import TargetClass, augment_deficits, verb_gerund
from tests.test_augment_helpers import VOCAB, Script, SolidGenerator, pipeline, real_dataset


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--classes", type=int, default=20)
    ap.add_argument("--need", type=int, default=5)
    ap.add_argument("--tiny", action="store_true", help="also time the tiny SDXL (imports diffusers)")
    args = ap.parse_args()

    hois = [h for h in range(VOCAB.n_hois) if VOCAB.hoi_verb_object[h][1] != VOCAB.person][: args.classes]
    # every other attempt of each class is rejected → paraphrase-and-regenerate on half the attempts
    reject = {(h, a) for h in hois for a in range(0, 4 * args.need, 2)}
    script = Script(reject=reject, yes_verbs=tuple(verb_gerund(v) for v in VOCAB.verbs))
    targets = [TargetClass.of(VOCAB, h, args.need) for h in hois]
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        real = real_dataset(tmp_path / "real", dict.fromkeys(hois, 3))
        kw = {"vocab": VOCAB, "dataset": real, "images_dir": tmp_path / "real"}

        t0 = time.perf_counter()
        res = augment_deficits(targets, out_dir=tmp_path / "out", pipeline=pipeline(SolidGenerator(), script), **kw)
        t_run = time.perf_counter() - t0
        attempts = sum(r["attempts"] for r in res.classes)

        # baseline: the same model calls in a bare loop
        p = pipeline(SolidGenerator(), script)
        bare = tmp_path / "bare"
        bare.mkdir()
        t0 = time.perf_counter()
        n_bare = 0
        for t in targets:
            verb, obj = VOCAB.verbs[t.verb], VOCAB.objects[t.object]
            filled, attempt, prompt = 0, 0, p.chat.basic_prompt(verb, obj)
            while filled < t.need and attempt < p.config.max_attempts:
                image = p.generator.generate(prompt, seed=attempt)
                path = bare / f"aug_h{t.hoi:03d}_a{attempt:04d}.png"
                image.save(path)  # the verifier reads the image from a file
                rec = p.inspect(path, image, t, VOCAB, key=(t.hoi, attempt))
                if rec["status"] == "kept":
                    filled += rec["target_instances"]
                else:
                    prompt = p.chat.paraphrase(prompt, verb=verb, obj=obj, key=(t.hoi, attempt))
                attempt += 1
                n_bare += 1
        t_bare = time.perf_counter() - t0

        t0 = time.perf_counter()
        again = augment_deficits(targets, out_dir=tmp_path / "out", pipeline=pipeline(SolidGenerator(), script), **kw)
        t_resume = time.perf_counter() - t0
        assert again.generated == 0 and again.dataset.equals(res.dataset)
        n_records = sum(1 for f in (tmp_path / "out").glob("manifest*.jsonl") for _ in f.open("rb"))

    print(f"classes {len(targets)}, need {args.need} each: {attempts} attempts "
          f"({res.dataset.n_images} kept images, {res.dataset.n_pairs} instances), {n_records} manifest records")
    print(f"full run          {t_run:8.3f} s  {1e3 * t_run / attempts:7.2f} ms/attempt")
    print(f"bare loop (base)  {t_bare:8.3f} s  {1e3 * t_bare / n_bare:7.2f} ms/attempt")
    print(f"ratio full/bare   {t_run / t_bare:8.2f}x  (bookkeeping: "
          f"{1e3 * (t_run / attempts - t_bare / n_bare):.2f} ms/attempt)")
    print(f"resume, all done  {t_resume:8.3f} s")
    if args.tiny:
        from hoibench.augment import GeneratorConfig, build_generator

        gen = build_generator(GeneratorConfig(kind="tiny", steps=4, width=64, height=64))
        gen.generate("warm up", seed=0)
        t0 = time.perf_counter()
        for s in range(5):
            gen.generate("a photo of a person riding a horse", seed=s)
        print(f"tiny SDXL 64x64, 4 steps, CPU: {(time.perf_counter() - t0) / 5 * 1e3:.1f} ms/image")


if __name__ == "__main__":
    main()
