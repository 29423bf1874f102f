"""The tiny Qwen2.5-VL that `python -m lmms_tasks make-tiny-vlm` builds: reproducible, small, loadable by
transformers as a Qwen2.5-VL (bf16, as lmms-eval's backend loads it), with a processor that places one
vision-token run per image or video part, and a decoding chain that answers `REPLY` under greedy and
sampled generation alike."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from lmms_tasks.__main__ import main as cli_main
from lmms_tasks.utils.testing import tiny_vlm as tv

pytestmark = pytest.mark.hf_backend

IMAGE_PAD, VIDEO_PAD = "<|image_pad|>", "<|video_pad|>"


@pytest.fixture(scope="module")
def loaded(tiny_vlm: Path):
    from transformers import AutoProcessor, Qwen2_5_VLForConditionalGeneration

    processor = AutoProcessor.from_pretrained(tiny_vlm, min_pixels=3136, max_pixels=12845056)
    model = Qwen2_5_VLForConditionalGeneration.from_pretrained(tiny_vlm, dtype="bfloat16").eval()
    return processor, model


def _colour_image(rgb: tuple[int, int, int], size: tuple[int, int] = (64, 48)) -> Image.Image:
    return Image.new("RGB", size, rgb)


def test_cli_build_is_byte_identical_for_a_seed_and_small(tiny_vlm: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["make-tiny-vlm", str(tmp_path / "again")]) == 0
    assert "tiny Qwen2.5-VL written to" in capsys.readouterr().out
    first, again = tv.file_digests(tiny_vlm), tv.file_digests(tmp_path / "again")
    assert first == again
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja"} <= set(first)
    total = sum((tiny_vlm / name).stat().st_size for name in first)
    assert total < 2_000_000, total
    other = tv.file_digests(tv.build(tmp_path / "seed1", seed=1))
    assert other["model.safetensors"] != first["model.safetensors"]


def test_config_is_a_small_qwen2_5_vl_with_the_qwen_special_tokens(tiny_vlm: Path, loaded) -> None:
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(tiny_vlm)
    processor, model = loaded
    tokenizer = processor.tokenizer
    assert config.model_type == "qwen2_5_vl" and config.architectures == ["Qwen2_5_VLForConditionalGeneration"]
    assert config.text_config.num_hidden_layers == 2 and config.vision_config.depth == 2
    head_dim = config.text_config.hidden_size // config.text_config.num_attention_heads
    assert sum(config.text_config.rope_parameters["mrope_section"]) == head_dim // 2
    for token in tv.SPECIAL_TOKENS:
        assert tokenizer.convert_tokens_to_ids(token) is not None
        assert tokenizer.convert_ids_to_tokens(tokenizer.convert_tokens_to_ids(token)) == token
    assert config.image_token_id == tokenizer.convert_tokens_to_ids(IMAGE_PAD)
    assert config.video_token_id == tokenizer.convert_tokens_to_ids(VIDEO_PAD)
    assert tokenizer.eos_token == "<|im_end|>"
    assert sum(p.numel() for p in model.parameters()) < 1_000_000


def test_chat_template_follows_the_qwen_format_in_content_order(loaded) -> None:
    processor, _ = loaded
    image = _colour_image((200, 30, 40))
    images_first = [{"role": "user", "content": [{"type": "image", "image": image}, {"type": "image", "image": image}, {"type": "text", "text": "Q?"}]}]
    assert processor.apply_chat_template(images_first, tokenize=False, add_generation_prompt=True) == (
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|><|vision_start|><|image_pad|><|vision_end|>Q?<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    text_first = [
        {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": [{"type": "text", "text": "Q?"}, {"type": "image", "image": image}, {"type": "video", "video": "v.mp4"}]},
    ]
    assert processor.apply_chat_template(text_first, tokenize=False, add_generation_prompt=False) == (
        "<|im_start|>system\nBe brief.<|im_end|>\n"
        "<|im_start|>user\nQ?<|vision_start|><|image_pad|><|vision_end|><|vision_start|><|video_pad|><|vision_end|><|im_end|>\n"
    )


def test_processor_expands_one_placeholder_run_per_image_and_video(loaded) -> None:
    processor, _ = loaded
    text = "<|vision_start|><|image_pad|><|vision_end|><|vision_start|><|image_pad|><|vision_end|><|vision_start|><|video_pad|><|vision_end|>x"
    frames = np.stack([np.full((56, 84, 3), 90, dtype=np.uint8)] * 4)
    inputs = processor(text=[text], images=[_colour_image((1, 2, 3)), _colour_image((4, 5, 6), (140, 112))], videos=[frames], return_tensors="pt")
    ids = inputs["input_ids"][0].tolist()
    image_id, video_id = processor.tokenizer.convert_tokens_to_ids(IMAGE_PAD), processor.tokenizer.convert_tokens_to_ids(VIDEO_PAD)
    assert inputs["image_grid_thw"].tolist() == [[1, 4, 4], [1, 8, 10]]  # 64x48 -> 56x56; 140x112 stays
    assert ids.count(image_id) == (16 + 80) // 4
    assert inputs["video_grid_thw"].tolist() == [[2, 4, 6]]  # 4 frames / temporal patch 2
    assert ids.count(video_id) == 2 * 4 * 6 // 4


@pytest.mark.parametrize(
    "sampling",
    [
        {"do_sample": False},
        {"do_sample": True, "temperature": 0.8, "top_p": 0.95, "top_k": 20},  # HumanEval-V pass@3
        {"do_sample": True, "temperature": 0.2, "top_p": 0.95},  # HAERAE-Vision
    ],
    ids=["greedy", "t0.8", "t0.2"],
)
def test_every_decoding_mode_answers_the_reply_then_stops(loaded, sampling: dict) -> None:
    import torch

    processor, model = loaded
    images = [_colour_image(c) for c in ((200, 30, 40), (10, 100, 250), (30, 200, 60), (250, 250, 250))]
    messages = [{"role": "user", "content": [{"type": "image", "image": i} for i in images] + [{"type": "text", "text": "Same? Answer T or F."}]}]
    text = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    inputs = processor(text=[text], images=images, return_tensors="pt")
    torch.manual_seed(0)
    for _ in range(3):
        out = model.generate(**inputs, max_new_tokens=2048, eos_token_id=processor.tokenizer.eos_token_id, **sampling)
        new = out[0, inputs["input_ids"].shape[1] :].tolist()
        assert new[-1] == processor.tokenizer.eos_token_id and len(new) == len(tv.reply_chain(processor.tokenizer)) - 1
        assert processor.batch_decode([new], skip_special_tokens=True) == [tv.REPLY]


def test_the_images_reach_the_model_even_though_the_answer_ignores_them(loaded) -> None:
    import torch

    processor, model = loaded

    def last_logits(rgb):
        image = _colour_image(rgb)
        text = processor.apply_chat_template([{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": "Q"}]}], tokenize=False, add_generation_prompt=True)
        with torch.no_grad():
            return model(**processor(text=[text], images=[image], return_tensors="pt")).logits[0, -1].float()

    red, blue = last_logits((220, 20, 20)), last_logits((20, 20, 220))
    assert not torch.equal(red, blue)  # the vision tower's output enters the sequence the model attends to
    top2 = red.topk(2).values
    assert float(top2[0] - top2[1]) > 20  # and still cannot flip the answer


def test_a_reply_that_repeats_a_token_is_refused() -> None:
    tokenizer = tv.build_tokenizer()
    with pytest.raises(ValueError, match="repeats a token"):
        tv.reply_chain(tokenizer, "T T T")
