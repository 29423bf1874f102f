"""A tiny Qwen2.5-VL built on this machine, for running our tasks through real model backends offline.

`python -m lmms_tasks make-tiny-vlm DIR` writes a complete Hugging Face model directory that
lmms-eval's `qwen2_5_vl` backend (transformers) and `vllm` load like any Qwen2.5-VL checkpoint:

- `config.json` for `Qwen2_5_VLForConditionalGeneration`: 2 text layers (hidden 64, 2 heads of 32, one
  KV head, M-RoPE sections summing to head_dim/2), a depth-2 vision tower with window attention and the
  2x2 patch merger; `model.safetensors` in bfloat16 (about 0.4M parameters, 0.8 MB);
- a byte-level BPE tokenizer trained here with the `tokenizers` library on a built-in corpus (about 600
  tokens), with the Qwen special tokens (`<|im_start|>`, `<|im_end|>`, `<|vision_start|>`,
  `<|image_pad|>`, `<|video_pad|>`, ...), saved as a `Qwen2Tokenizer`;
- a Qwen-format chat template written for this module (default system prompt, one
  `<|vision_start|><|image_pad|><|vision_end|>` per image part and `<|video_pad|>` per video part, in
  content order);
- `Qwen2VLImageProcessor` and `Qwen2VLVideoProcessor` with small pixel limits.

Nothing is downloaded. The build is seeded: the same seed and the same library versions give
byte-identical files.

The weights are random (transformers' own initialisation) except the token embedding and the LM head,
which are arranged so that decoding is a short chain: whatever the images and text, the model answers
`REPLY` and then `<|im_end|>`, with a logit margin of about 30 at every step. Without that, a random model
generates until `max_new_tokens` (2048 for HumanEval-V) on every request, which on a CPU takes hours
for a handful of records; with it, sampling (T=0.8, top_p, top_k) gives the same tokens as greedy
decoding, so runs are deterministic and a 1-process and a 2-process run can be compared exactly. The
images still go through the vision tower and into the sequence the model attends to, so the processor's
vision tokens are real; they just cannot change the answer.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import random
from pathlib import Path
from typing import Any

DEFAULT_SEED = 0
# What the model answers to everything: each benchmark's parsers find something in it (a T/F answer "T", a
# count "1", a judge score "Score: 1"), so the metrics of a run are not all zero.
REPLY = "Score: 1 T"
DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant."

# The Qwen2-VL / Qwen2.5-VL special tokens, in their published order.
SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
)
EOS_TOKEN = "<|im_end|>"
PAD_TOKEN = "<|endoftext|>"
GENERATION_PROMPT = "<|im_start|>assistant\n"

# Pixel limits of the saved processors: small, so a test image becomes a handful of vision tokens even
# when a backend does not pass its own limits (lmms-eval's qwen2_5_vl backend does).
MIN_PIXELS = 28 * 28 * 4
MAX_PIXELS = 28 * 28 * 64

# Written for this module: the Qwen chat format (`<|im_start|>role\n...<|im_end|>\n`), the default system
# prompt when the conversation has none, and one vision block per image/video part in content order.
# Parts are recognised by their `type` (HF messages carry the image under `image`; vLLM passes
# `{"type": "image"}` and `image_url` parts).
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if loop.first and message['role'] != 'system' -%}"
    "{{- '<|im_start|>system\\n' + default_system + '<|im_end|>\\n' -}}"
    "{%- endif -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
    "{%- if message['content'] is string -%}"
    "{{- message['content'] -}}"
    "{%- else -%}"
    "{%- for part in message['content'] -%}"
    "{%- if part['type'] in ('image', 'image_url') -%}"
    "{{- '<|vision_start|><|image_pad|><|vision_end|>' -}}"
    "{%- elif part['type'] in ('video', 'video_url') -%}"
    "{{- '<|vision_start|><|video_pad|><|vision_end|>' -}}"
    "{%- elif part['type'] == 'text' -%}"
    "{{- part['text'] -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- endif -%}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{- '<|im_start|>assistant\\n' -}}"
    "{%- endif -%}"
).replace("default_system", repr(DEFAULT_SYSTEM_PROMPT))

# Text model sizes (head_dim 32: vLLM's attention kernels take no smaller head).
TEXT = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "max_position_embeddings": 32768,
}
MROPE_SECTION = [4, 6, 6]  # temporal, height, width: sums to head_dim / 2 = 16
VISION = {
    "depth": 2,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_heads": 2,
    "out_hidden_size": 64,
    "patch_size": 14,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "window_size": 112,
    "fullatt_block_indexes": [1],
    "tokens_per_second": 2,
}
BPE_VOCAB_SIZE = 600

# Logit construction (see module docstring): chain tokens get logit CHAIN_GAIN * sqrt(d) for their
# successor; every other token puts EOS_GAIN * SHARED / rms on <|im_end|>; every other logit is ~0.
SHARED = 4.0
CHAIN_GAIN = 4.0
EOS_GAIN = 8.0

_CORPUS_TEXT = """\
The model looks at every image and answers the question. Are the objects in these images the same?
Answer T or F. How many different people appear in the pictures? Which images show the same object?
Give a comprehensive description of the whole video. Score: 1 Score: 0 Score: 2 Write a Python function that solves the problem
shown in the diagram. Return the result. The first image shows a red box; the second shows a blue box.
def solution(values: list) -> int:
    total = 0
    for value in values:
        if value % 2 == 0:
            total += value
    return total
import math
class Grid:
    def __init__(self, rows, cols):
        self.rows = rows
        self.cols = cols
이 사진에 나온 것이 무엇인가요? 첫 번째 스크린샷의 게임 제목을 알려주세요. 정답은 무엇입니까?
"""


def _corpus(seed: int) -> list[str]:
    """The tokenizer's training text: the paragraph above plus seeded word salad from its own words."""
    rng = random.Random(seed)
    words = _CORPUS_TEXT.split()
    lines = _CORPUS_TEXT.splitlines()
    for _ in range(400):
        lines.append(" ".join(rng.choice(words) for _ in range(rng.randint(3, 12))))
    return lines


def build_tokenizer(seed: int = DEFAULT_SEED) -> Any:
    """Train a byte-level BPE with Qwen2's pre-tokenisation and wrap it as a transformers Qwen2Tokenizer."""
    import json

    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import Qwen2Tokenizer
    from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

    bpe = Tokenizer(models.BPE())
    bpe.normalizer = normalizers.NFC()
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=BPE_VOCAB_SIZE,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(_corpus(seed), trainer=trainer)
    model = json.loads(bpe.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
    tokenizer = Qwen2Tokenizer(
        vocab=model["vocab"],
        merges=merges,
        unk_token=None,
        bos_token=None,
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        extra_special_tokens=[t for t in SPECIAL_TOKENS if t not in (EOS_TOKEN, PAD_TOKEN)],
        model_max_length=TEXT["max_position_embeddings"],
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    for token in SPECIAL_TOKENS:  # the trainer gave them ids 0..13; the wrapper must keep them
        assert tokenizer.convert_tokens_to_ids(token) == SPECIAL_TOKENS.index(token), token
    return tokenizer


def build_config(tokenizer: Any) -> Any:
    from transformers import Qwen2_5_VLConfig

    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in SPECIAL_TOKENS}
    vocab_size = 64 * math.ceil(len(tokenizer) / 64)
    text = dict(
        TEXT,
        vocab_size=vocab_size,
        hidden_act="silu",
        rms_norm_eps=1e-6,
        max_window_layers=TEXT["num_hidden_layers"],
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": MROPE_SECTION},
        bos_token_id=ids[PAD_TOKEN],
        eos_token_id=ids[EOS_TOKEN],
        pad_token_id=ids[PAD_TOKEN],
    )
    config = Qwen2_5_VLConfig(
        text_config=text,
        vision_config=dict(VISION, hidden_act="silu", in_channels=3),
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=False,
        bos_token_id=ids[PAD_TOKEN],
        eos_token_id=ids[EOS_TOKEN],
        pad_token_id=ids[PAD_TOKEN],
    )
    config.architectures = ["Qwen2_5_VLForConditionalGeneration"]
    config.dtype = "bfloat16"
    return config


def reply_chain(tokenizer: Any, reply: str = REPLY) -> list[int]:
    """Token ids of the decoding chain: the generation prompt's last token, the reply's tokens, EOS."""
    prompt_ids = tokenizer.encode(GENERATION_PROMPT, add_special_tokens=False)
    reply_ids = tokenizer.encode(reply, add_special_tokens=False)
    chain = [prompt_ids[-1], *reply_ids, tokenizer.convert_tokens_to_ids(EOS_TOKEN)]
    if len(set(chain)) != len(chain):
        raise ValueError(f"reply {reply!r} repeats a token ({chain}); a one-token-context chain cannot express it")
    if tokenizer.decode(reply_ids) != reply:
        raise ValueError(f"reply {reply!r} does not round-trip through the tokenizer")
    return chain


def _arrange_embeddings(model: Any, chain: list[int], seed: int) -> None:
    """Set the token embedding and LM head so that greedy (and sharp sampled) decoding follows `chain`."""
    import torch

    embed = model.get_input_embeddings().weight
    head = model.get_output_embeddings().weight
    vocab, dim = embed.shape
    predecessors = chain[:-2]  # each maps to the next chain token; the last reply token maps to EOS
    generator = torch.Generator().manual_seed(seed + 1)
    basis, _ = torch.linalg.qr(torch.randn(dim, dim, generator=generator, dtype=torch.float64))
    shared, chain_dirs, rest = basis[:, 0], basis[:, 1 : 1 + len(predecessors)], basis[:, 1 + len(predecessors) :]
    with torch.no_grad():
        # Every token: a shared direction (-> EOS) plus a random part orthogonal to the chain directions.
        random_part = torch.randn(vocab, rest.shape[1], generator=generator, dtype=torch.float64) @ rest.T
        new_embed = SHARED * shared + random_part
        new_head = torch.zeros(vocab, dim, dtype=torch.float64)
        new_head[chain[-1]] = EOS_GAIN * shared
        for k, (token, successor) in enumerate(zip(predecessors, chain[1:-1])):
            new_embed[token] = math.sqrt(dim) * chain_dirs[:, k]  # no shared part: EOS logit 0 here
            new_head[successor] = CHAIN_GAIN * chain_dirs[:, k]
        embed.copy_(new_embed.to(embed.dtype))
        head.copy_(new_head.to(head.dtype))


def build(out_dir: str | Path, seed: int = DEFAULT_SEED, reply: str = REPLY) -> Path:
    """Write the tiny model, tokenizer, processors and chat template to `out_dir`; return it."""
    import torch
    import transformers
    from transformers import (
        Qwen2_5_VLForConditionalGeneration,
        Qwen2_5_VLProcessor,
        Qwen2VLImageProcessor,
        Qwen2VLVideoProcessor,
    )

    if int(transformers.__version__.split(".")[0]) < 5:
        raise RuntimeError(f"make-tiny-vlm needs transformers >= 5 (its tokenizer and config formats); found {transformers.__version__}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(seed)
    config = build_config(tokenizer)
    chain = reply_chain(tokenizer, reply)
    torch.manual_seed(seed)
    model = Qwen2_5_VLForConditionalGeneration(config).eval()
    _arrange_embeddings(model, chain, seed)
    model = model.to(torch.bfloat16)
    model.generation_config.do_sample = False
    model.generation_config.eos_token_id = config.text_config.eos_token_id
    model.generation_config.pad_token_id = config.text_config.pad_token_id
    model.save_pretrained(out, safe_serialization=True)
    limits = {"min_pixels": MIN_PIXELS, "max_pixels": MAX_PIXELS}
    processor = Qwen2_5_VLProcessor(
        image_processor=Qwen2VLImageProcessor(**limits),
        video_processor=Qwen2VLVideoProcessor(**limits),
        tokenizer=tokenizer,
        chat_template=CHAT_TEMPLATE,
    )
    processor.save_pretrained(out)
    return out


def file_digests(model_dir: str | Path) -> dict[str, str]:
    """sha256 of every file the build wrote (for determinism checks and the CLI summary)."""
    root = Path(model_dir)
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lmms_tasks make-tiny-vlm", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir", type=Path, help="directory to write the model to (created if missing)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--reply", default=REPLY, help=f"what the model answers to everything (default {REPLY!r}; its tokens must be distinct)")
    args = parser.parse_args(argv)
    out = build(args.out_dir, seed=args.seed, reply=args.reply)
    digests = file_digests(out)
    size = sum((out / name).stat().st_size for name in digests)
    print(f"tiny Qwen2.5-VL written to {out} ({len(digests)} files, {size / 1e6:.2f} MB)")
    print(f"model.safetensors sha256 {digests.get('model.safetensors', '?')}")
    return 0
