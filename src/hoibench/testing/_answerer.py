"""A stand-in VLM for ``hoibench mcq run``: the replies of :class:`QuestionAnswerer` make the fake
chat server (``python -m hoibench.testing.fake_server``) answer the runner's requests from the
questions' ground truth, at random, or always with the first letter.

The server sees what a real server sees: the prompt text and the image. A question prompt is
mapped back to its question by the choices it shows (the bundled templates' ``(A) text`` lines,
``no_interaction`` choices as the released code words them); when several questions show the same
choices with different answers, the target person's box in the prompt, the image (``images``:
recognised by its bytes when the runner sends it unchanged, by its look at 16x16 pixels when it
sends it resized) and the choice order of ``seed`` pick it.
The two other requests of the runner are answered too: the perceived image size (InternVL) with
the received image's size, and the setting-3 person detection with the target people of the
recognised image in the received image's pixels (right for every box convention but the 0-1000
grids of ``qwen3`` and ``relative-1000``), in every mode; an image it does not know gets random
boxes (``random``, ``first``) or no people (``truth``).
"""

from __future__ import annotations

import hashlib
import io
import json
import random
import re
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from hoibench.data import MCQuestion, shown_choice_text
from hoibench.testing._fake_server import FakeReply, request_image, request_text

__all__ = ["ANSWER_MODES", "QuestionAnswerer"]

#: ``truth``: the correct choices; ``random``: a random non-empty subset of the shown choices
#: (the same for the same prompt); ``first``: always ``A``
ANSWER_MODES = ("truth", "random", "first")

_CHOICE_LINE = re.compile(r"^\(([A-Z])\) (.*?)\s*$", re.M)
_BOX = re.compile(r"\[\s*(-?[\d.]+)\s*,\s*(-?[\d.]+)\s*,\s*(-?[\d.]+)\s*,\s*(-?[\d.]+)\s*\]")
_PAD = "None"  # the bundled templates' filler for questions with fewer than four choices
_PERMUTATIONS = 16  # choice orders tried when the order decides between questions


class QuestionAnswerer:
    """``handler(body) -> str | FakeReply`` for :class:`~hoibench.testing.FakeChatServer`.

    ``questions`` (needed by ``mode="truth"``); ``images``: the folder their file names are
    relative to (lets the server recognise an image; needed for setting 3 in truth mode);
    ``seed``: the runner's ``--seed`` (choice order, and the random mode's draws); ``latency``:
    seconds before each reply; ``on_problem``: called once with the first problem met (a prompt
    that matches no question, an image it cannot recognise). ``counts`` says what was answered how (``truth``, ``ambiguous``:
    answered from the first of several matching questions, ``unmatched``: no question matched).
    """

    def __init__(self, mode: str = "truth", *, questions: Iterable[MCQuestion] = (),
                 images: str | Path | None = None, seed: int = 0, latency: float = 0.0,
                 on_problem: Callable[[str], None] | None = None) -> None:
        if mode not in ANSWER_MODES:
            raise ValueError(f"mode must be one of {list(ANSWER_MODES)}; got {mode!r}")
        if not latency >= 0:
            raise ValueError(f"latency must be >= 0 seconds; got {latency}")
        self.mode, self.seed, self.latency = mode, seed, float(latency)
        self.questions = list(questions)
        if mode == "truth" and not self.questions:
            raise ValueError("the truth mode needs the questions (--questions)")
        self._by_choices: dict[frozenset[str], list[MCQuestion]] = defaultdict(list)
        self._people: dict[str, list[tuple[float, ...]]] = defaultdict(list)
        for q in self.questions:
            self._by_choices[frozenset(shown_choice_text(c.text) for c in q.choices)].append(q)
            if q.person_box is not None and tuple(q.person_box) not in self._people[q.file_name]:
                self._people[q.file_name].append(tuple(q.person_box))
        self._files: dict[str, str] = {}  # sha256 of an image file -> its file name
        self._sizes: dict[str, tuple[int, int]] = {}  # file name -> original size
        self._thumbs: list[tuple[str, Any]] | None = None  # file names and 16x16 thumbnails
        self._root = None if images is None else Path(images)
        self.missing_images = 0
        if self._root is not None:
            for name in dict.fromkeys(q.file_name for q in self.questions):
                try:
                    raw = (self._root / name).read_bytes()
                except OSError:
                    self.missing_images += 1
                    continue
                self._files.setdefault(hashlib.sha256(raw).hexdigest(), name)
                self._sizes[name] = _image_size(raw) or (0, 0)
        self.counts: dict[str, int] = defaultdict(int)
        self.first_problem: str | None = None
        self.on_problem = on_problem
        self._lock = threading.Lock()

    @property
    def images_known(self) -> int:
        """Images of the questions that the server recognises by their bytes."""
        return len(self._files)

    def __call__(self, body: dict[str, Any]) -> FakeReply:
        text = self.reply(body)
        if text is None:  # an error answer with the reason, not a silently empty one
            return FakeReply("fake server: the prompt matches no question of its --questions file",
                             status=400, delay=self.latency)
        return FakeReply(text, delay=self.latency)

    # ------------------------------------------------------------------ the three requests
    def reply(self, body: dict[str, Any]) -> str | None:
        """The text a model would answer to one chat request; ``None`` for a question prompt that
        matches no question (truth mode)."""
        text = request_text(body)
        image = request_image(body)
        shown = _CHOICE_LINE.findall(text)
        if not shown:
            if "width, height" in text:
                return self._size(image)
            return self._detect(image)
        letters = [k for k, t in shown if t != _PAD] or [k for k, _ in shown]
        if self.mode == "first":
            picked = [letters[0]]
        elif self.mode == "random":
            rng = random.Random(f"{self.seed}:{text}")
            picked = [k for k in letters if rng.random() < 0.5] or [rng.choice(letters)]
        else:
            picked = self._truth(text, shown, image)
        self._count(self.mode if self.mode != "truth" or picked is not None else "unmatched")
        if picked is None:
            return None
        answer = ",".join(picked)
        return f"<answer>{answer}</answer>" if "<answer>" in text else answer

    def _size(self, image: bytes | None) -> str:
        self._count("image_size")
        size = _image_size(image)
        return "[0, 0]" if size is None else json.dumps(list(size))

    def _detect(self, image: bytes | None) -> str:
        self._count("detection")
        # the target people whenever the image is known (every mode: `random` and `first` answer
        # the questions, not the detection, at random); random boxes only for an unknown image
        name = self._file_of(image) if self._people else None
        if self.mode == "truth" or name is not None:
            if name is None:
                self._problem("a setting-3 detection request for an image the server does not know: "
                              "start it with the runner's --images; answering no people")
                return json.dumps({"boxes": []})
            # in the received image's pixels: the model frame of every convention but qwen3 and
            # relative-1000 (a 0-1000 grid)
            got, orig = _image_size(image), self._sizes.get(name)
            sx, sy = (got[0] / orig[0], got[1] / orig[1]) if got and orig and orig[0] and orig[1] else (1, 1)
            return json.dumps({"boxes": [[round(b[0] * sx, 2), round(b[1] * sy, 2), round(b[2] * sx, 2),
                                          round(b[3] * sy, 2)] for b in self._people[name]]})
        size = _image_size(image) or (640, 480)
        rng = random.Random(f"{self.seed}:{hashlib.sha256(image or b'').hexdigest()}")
        boxes = []
        for _ in range(rng.randint(1, 3)):
            x, y = rng.uniform(0, size[0] * 0.7), rng.uniform(0, size[1] * 0.7)
            boxes.append([round(x, 2), round(y, 2), round(x + rng.uniform(8, size[0] * 0.3), 2),
                          round(y + rng.uniform(8, size[1] * 0.3), 2)])
        return json.dumps({"boxes": boxes})

    # ------------------------------------------------------------------ truth
    def _truth(self, text: str, shown: Sequence[tuple[str, str]], image: bytes | None) -> list[str] | None:
        """The correct letters of the question the prompt shows; ``None`` when none matches."""
        texts = [shown_choice_text(t) for _, t in shown]
        candidates = self._by_choices.get(frozenset(texts))
        if candidates is None:  # padded to four choices with "None"
            texts = [t for t in texts if t != _PAD]
            candidates = self._by_choices.get(frozenset(texts))
        if not candidates:
            self._problem(f"a prompt shows choices {texts} that no question has: are --questions the "
                          "file the runner reads?")
            return None
        if len({q.correct_texts for q in candidates}) > 1:
            candidates = self._narrow(candidates, text, texts, image)
        q = candidates[0]
        if len({_shown_correct(c) for c in candidates}) > 1:
            self._count("ambiguous")
        correct = _shown_correct(q)
        return [k for k, t in shown if shown_choice_text(t) in correct]

    def _narrow(self, candidates: list[MCQuestion], text: str, texts: list[str],
                image: bytes | None) -> list[MCQuestion]:
        """Questions with the same choices, told apart by image, target box and choice order."""
        name = self._file_of(image)
        same = [q for q in candidates if q.file_name == name]
        candidates = same or candidates
        head = text[:text.find("(A) ")] if "(A) " in text else text
        box = _BOX.search(head)
        if box is not None and len(candidates) > 1:
            b = [float(v) for v in box.groups()]
            size = _image_size(image)
            dist = [_box_distance(b, q, size) for q in candidates]
            best = min(dist)
            candidates = [q for q, d in zip(candidates, dist) if d <= best + 0.5]
        candidates = self._in_order(candidates, texts, range(1))  # the runner's default order
        if box is None:  # a whole-image prompt: setting-1 questions first
            candidates = [q for q in candidates if q.setting == 1] or candidates
        return self._in_order(candidates, texts, range(_PERMUTATIONS))

    def _in_order(self, candidates: list[MCQuestion], texts: list[str],
                  permutations: range) -> list[MCQuestion]:
        """The candidates that show their choices in this order under one of ``permutations``
        (all of them when none or one does)."""
        if len(candidates) < 2:
            return candidates
        return [q for q in candidates if any(
            [shown_choice_text(q.choices[i].text) for i in q.order(self.seed, p)] == texts
            for p in permutations)] or candidates

    def _file_of(self, image: bytes | None) -> str | None:
        """The question file name of an image: by its bytes (sent unchanged), else the known image
        that looks most alike at 16x16 pixels with the same aspect ratio (sent resized)."""
        if image is None or not self._files:
            return None
        name = self._files.get(hashlib.sha256(image).hexdigest())
        if name is not None:
            return name
        with self._lock:
            if self._thumbs is None:
                self._thumbs = [(n, _thumbnail((self._root / n).read_bytes()))  # type: ignore[operator]
                                for n in self._files.values()]
        got, thumb = _image_size(image), _thumbnail(image)
        if got is None or thumb is None:
            return None
        best, name = float("inf"), None
        for n, t in self._thumbs:
            w, h = self._sizes[n]
            if t is None or not h or abs(got[0] / got[1] - w / h) > 0.05 * w / h:
                continue
            d = float(abs(t - thumb).mean())
            if d < best:
                best, name = d, n
        return name

    # ------------------------------------------------------------------ bookkeeping
    def _count(self, key: str) -> None:
        with self._lock:
            self.counts[key] += 1

    def _problem(self, message: str) -> None:
        with self._lock:
            first = self.first_problem is None
            if first:
                self.first_problem = message
        if first and self.on_problem is not None:
            self.on_problem(message)

    def summary(self) -> str:
        """One line: what was answered how, and the first problem met."""
        c = self.counts
        names = {"truth": "questions from the ground truth", "random": "questions at random",
                 "first": "questions with A", "unmatched": "question prompts that match no question",
                 "image_size": "image-size requests", "detection": "detection requests"}
        parts = [f"{c[k]} {v}" for k, v in names.items() if c.get(k)]
        line = "answered " + (", ".join(parts) if parts else "no requests")
        if c.get("ambiguous"):
            line += (f"; {c['ambiguous']} prompts matched several questions with different answers "
                     "(answered from the first)")
        return line + (f"; first problem: {self.first_problem}" if self.first_problem else "")


def _shown_correct(q: MCQuestion) -> frozenset[str]:
    return frozenset(shown_choice_text(t) for t in q.correct_texts)


def _image_size(image: bytes | None) -> tuple[int, int] | None:
    if not image:
        return None
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(image)) as im:
            return im.size
    except (UnidentifiedImageError, OSError):
        return None


def _thumbnail(image: bytes) -> Any:
    """The image at 16x16 RGB as a float array (``None`` when it cannot be decoded)."""
    import numpy as np
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(image)) as im:
            return np.asarray(im.convert("RGB").resize((16, 16)), dtype=np.float32)
    except (UnidentifiedImageError, OSError):
        return None


def _box_distance(box: Sequence[float], q: MCQuestion, size: tuple[int, int] | None) -> float:
    """How far a prompt's box is from the question's target box in the frames the runner writes
    (original pixels, shifted by 1, the received image's pixels, a 0-1000 grid)."""
    if q.person_box is None:
        return float("inf")
    p = [float(v) for v in q.person_box]
    frames = [(1.0, 1.0, 0.0), (1.0, 1.0, 1.0)]
    if q.width and q.height:
        frames.append((1000 / q.width, 1000 / q.height, 0.0))
        if size is not None:
            frames.append((size[0] / q.width, size[1] / q.height, 0.0))
    return min(max(abs(box[k] - (p[k] + shift) * (sx if k % 2 == 0 else sy)) for k in range(4))
               for sx, sy, shift in frames)
