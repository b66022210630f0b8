"""The ``transformers`` backend: request construction with a fake processor/model (fast), and an
end-to-end run of a tiny, randomly initialised Qwen2-VL built from a config on the CPU (slow; no
downloads: the tokenizer is a byte-level one made here)."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from hoibench.data import Choice, MCQuestion
from hoibench.formats import read_answers
from hoibench.models import ChatMessage, ChatRequest, GenerationParams, ImagePart
from hoibench.models._transformers import TransformersBackend
from hoibench.runners import MCQRunner

torch = pytest.importorskip("torch")


def _png(size, color=(200, 10, 10)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG")
    return buf.getvalue()


class FakeProcessor:
    """Records what the backend hands a processor; tokens are the characters' code points."""

    def __init__(self):
        self.tokenizer = type("Tok", (), {"padding_side": "right"})()
        self.calls = []

    def apply_chat_template(self, conv, tokenize, add_generation_prompt):
        assert tokenize is False and add_generation_prompt is True
        parts = []
        for m in conv:
            for c in m["content"]:
                parts.append("<img>" if c["type"] == "image" else c["text"])
        return "".join(parts) + "|"

    def __call__(self, text, images, return_tensors, padding):
        self.calls.append((list(text), images))
        n = max(len(t) for t in text)
        ids = torch.tensor([[0] * (n - len(t)) + [ord(ch) for ch in t] for t in text])  # left pad
        return _Batch(input_ids=ids, attention_mask=(ids > 0).long())

    def batch_decode(self, ids, skip_special_tokens):
        return ["".join(chr(int(i)) for i in row) for row in ids]


class _Batch(dict):
    def to(self, device):
        return self


class FakeModel:
    device = "cpu"

    def __init__(self):
        self.kwargs = []

    def generate(self, input_ids, attention_mask, **kw):
        self.kwargs.append(kw)
        reply = torch.tensor([[ord("A"), ord(",")]] * input_ids.shape[0])
        return torch.cat([input_ids, reply], dim=1)


def test_backend_builds_inputs_and_returns_only_new_tokens():
    proc, model = FakeProcessor(), FakeModel()
    backend = TransformersBackend(model="fake", model_obj=model, processor=proc, batch_size=2)
    img = ImagePart(data=_png((56, 56)), mime="image/png")
    reqs = [ChatRequest((ChatMessage.user(img, f"question {i}"),), GenerationParams(max_tokens=7))
            for i in range(3)]
    seen = []
    out = backend.generate(reqs, lambda i, r: seen.append(i))
    assert [r.text for r in out] == ["A,"] * 3 and seen == [0, 1, 2]
    assert proc.tokenizer.padding_side == "left"
    texts, images = proc.calls[0]
    assert texts == ["<img>question 0|", "<img>question 1|"]
    assert len(images) == 2 and images[0].size == (56, 56) and images[0].mode == "RGB"
    assert model.kwargs[0] == {"max_new_tokens": 7, "do_sample": False}
    sampled = ChatRequest(reqs[0].messages, GenerationParams(temperature=0.7, top_p=0.9, seed=3))
    backend.generate([sampled])
    assert model.kwargs[-1] == {"max_new_tokens": 512, "do_sample": True, "temperature": 0.7, "top_p": 0.9}


def _byte_tokenizer(specials):
    """A byte-level tokenizer with no merges (every byte a token) and the given special tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    vocab = {c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(specials)
    return tok


def _tiny_qwen2_vl(monkeypatch):
    from transformers import (
        PreTrainedTokenizerFast,
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLProcessor,
        processing_utils,
    )

    try:  # transformers 5 without torchvision: the PIL image processor
        from transformers import Qwen2VLImageProcessorPil as ImageProcessor
    except ImportError:  # pragma: no cover - older transformers
        from transformers import Qwen2VLImageProcessor as ImageProcessor

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                "<|image_pad|>", "<|video_pad|>"]
    tok = _byte_tokenizer(specials)
    template = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% for c in m['content'] %}"
                "{% if c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
                "{% else %}{{ c['text'] }}{% endif %}{% endfor %}<|im_end|>\n{% endfor %}"
                "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   chat_template=template)
    # the video processor needs torchvision, absent here; images do not need it
    orig = processing_utils.ProcessorMixin.check_argument_for_proper_class
    monkeypatch.setattr(processing_utils.ProcessorMixin, "check_argument_for_proper_class",
                        lambda self, name, arg: None if arg is None else orig(self, name, arg))
    processor = Qwen2VLProcessor(image_processor=ImageProcessor(min_pixels=56 * 56, max_pixels=28 * 28 * 64),
                                 tokenizer=fast, chat_template=template)
    ids = {t: fast.convert_tokens_to_ids(t) for t in specials}
    config = Qwen2VLConfig(
        text_config={"vocab_size": len(fast), "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                     "num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 4096,
                     "rope_scaling": {"type": "mrope", "mrope_section": [2, 3, 3]},
                     "eos_token_id": ids["<|im_end|>"], "pad_token_id": ids["<|endoftext|>"],
                     "bos_token_id": ids["<|endoftext|>"]},
        vision_config={"depth": 1, "embed_dim": 32, "hidden_size": 32, "num_heads": 2, "mlp_ratio": 2,
                       "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2, "in_channels": 3},
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"])
    torch.manual_seed(0)
    model = Qwen2VLForConditionalGeneration(config).eval()
    return model, processor, fast


@pytest.mark.slow
def test_tiny_qwen2_vl_end_to_end(tmp_path, monkeypatch):
    model, processor, tok = _tiny_qwen2_vl(monkeypatch)
    # steer the random model: a bias that makes "B" the most likely first token
    letter = tok.convert_tokens_to_ids("B")
    head = model.lm_head
    bias = torch.zeros(head.out_features)
    bias[letter] = 1e4
    head.bias = torch.nn.Parameter(bias)

    img_dir = tmp_path / "img"
    img_dir.mkdir()
    Image.new("RGB", (130, 90), (10, 200, 30)).save(img_dir / "a.jpg")
    Image.new("RGB", (90, 130), (200, 20, 30)).save(img_dir / "b.jpg")
    qs = [MCQuestion(id=f"q{i}", file_name="ab"[i % 2] + ".jpg", setting=2,
                     choices=(Choice("hold a/an cup"), Choice("drink_with a/an cup"), Choice("wash a/an cup"),
                              Choice("no_interaction with a/an cup")),
                     correct=frozenset({1}), person_box=(10.0, 10.0, 60.0, 80.0)) for i in range(4)]
    backend = TransformersBackend(model="tiny-qwen2-vl", model_obj=model, processor=processor, batch_size=2)
    runner = MCQRunner(backend, images=img_dir, model="Qwen2-VL-tiny", progress=False,
                       params=GenerationParams(max_tokens=1))
    summary = runner.run(qs, tmp_path / "answers.jsonl")
    assert summary.ok == 4
    answers = read_answers(tmp_path / "answers.jsonl", qs).by_id()
    for q in qs:
        a = answers[q.id]
        assert a.raw == "B"
        assert a.selected == {q.choices[q.order(0)[1]].text}
        # 130x90 → 140x84 after smart_resize (factor 28): the box is written in that frame
        assert a.meta["prompt_box"] == ("[10.77, 9.33, 64.62, 74.67]" if q.file_name == "a.jpg"
                                        else "[9.33, 10.77, 56.0, 86.15]")

    # the backend's reply equals a direct processor + generate call on the same resized image
    sent = Image.new("RGB", (130, 90), (10, 200, 30)).resize((140, 84))
    conv = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "hello"}]}]
    text = processor.apply_chat_template(conv, tokenize=False, add_generation_prompt=True)
    inputs = processor(text=[text], images=[sent], return_tensors="pt", padding=True)
    assert inputs["image_grid_thw"].tolist() == [[1, 84 // 14, 140 // 14]]
    direct = model.generate(**inputs, max_new_tokens=1, do_sample=False)
    assert processor.batch_decode(direct[:, inputs["input_ids"].shape[1]:], skip_special_tokens=True) == ["B"]


def _save_tiny_llava(folder):
    """A tiny random LLaVA (CLIP vision tower, Llama text model) and its processor saved to disk:
    the ``from_pretrained`` path of the backend. LLaVA, not Qwen2-VL: transformers 5 builds every
    Qwen2-VL processor with a video processor that needs torchvision (``AutoProcessor`` raises
    ``Qwen2VLVideoProcessor requires the Torchvision library``, and ``save_pretrained`` of a
    processor without it fails), while LLaVA's PIL image processor needs none."""
    import transformers
    from transformers import (
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )

    specials = ["<pad>", "<s>", "</s>", "<|image|>"]  # the prompts themselves say "<image>"
    tok = _byte_tokenizer(specials)
    template = ("{% for m in messages %}{{ m['role'] }}: {% for c in m['content'] %}{% if c['type'] == 'image' %}"
                "<|image|>{% else %}{{ c['text'] }}{% endif %}{% endfor %}\n{% endfor %}"
                "{% if add_generation_prompt %}assistant: {% endif %}")
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="</s>", pad_token="<pad>", bos_token="<s>",
                                   chat_template=template)
    image_processor = getattr(transformers, "CLIPImageProcessorPil", transformers.CLIPImageProcessor)
    processor = LlavaProcessor(image_processor=image_processor(size={"shortest_edge": 28},
                                                               crop_size={"height": 28, "width": 28}),
                               tokenizer=fast, patch_size=14, chat_template=template, image_token="<|image|>",
                               vision_feature_select_strategy="default", num_additional_image_tokens=1)
    ids = {t: fast.convert_tokens_to_ids(t) for t in specials}
    config = LlavaConfig(
        vision_config={"model_type": "clip_vision_model", "hidden_size": 16, "intermediate_size": 32,
                       "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": 28, "patch_size": 14},
        text_config={"model_type": "llama", "vocab_size": len(fast), "hidden_size": 16, "intermediate_size": 32,
                     "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
                     "pad_token_id": ids["<pad>"], "eos_token_id": ids["</s>"], "bos_token_id": ids["<s>"]},
        image_token_id=ids["<|image|>"], vision_feature_layer=-1, vision_feature_select_strategy="default")
    torch.manual_seed(0)
    LlavaForConditionalGeneration(config).eval().save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def test_loads_a_model_and_processor_saved_to_disk(tmp_path):
    from hoibench.models import make_backend

    folder = _save_tiny_llava(tmp_path / "tiny-llava")
    img_dir = tmp_path / "img"
    img_dir.mkdir()
    Image.new("RGB", (40, 30), (10, 200, 30)).save(img_dir / "a.jpg")
    qs = [MCQuestion(id=f"q{i}", file_name="a.jpg", setting=1,
                     choices=(Choice("hold a/an cup"), Choice("wash a/an cup")), correct=frozenset({0}))
          for i in range(2)]
    backend = make_backend("transformers", model=str(folder), batch_size=2, processor_kwargs={"backend": "pil"})
    assert backend.fingerprint()["processor_kwargs"] == {"backend": "pil"}
    summary = MCQRunner(backend, images=img_dir, model="tiny-llava", progress=False,
                        params=GenerationParams(max_tokens=2)).run(qs, tmp_path / "answers.jsonl")
    assert summary.ok + summary.parse_error == 2 and summary.error == 0
    assert type(backend._model).__name__ == "LlavaForConditionalGeneration"
    assert type(backend._processor).__name__ == "LlavaProcessor"
    raws = [a.raw for a in read_answers(tmp_path / "answers.jsonl")]
    assert len(raws) == 2 and raws[0] is not None
