"""The vLLM max_new_tokens floor and a missing limit_mm_per_prompt are reported, not silently scored."""

from __future__ import annotations

import pytest

from lmms_tasks.utils.services.model_args import model_args_warnings

TASK = "vlm2_bench_gc_mat"  # official max_new_tokens 512


def _argv(model: str, model_args: str) -> list[str]:
    return ["lmms-eval", "--model", model, "--model_args", model_args, "--tasks", TASK]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (_argv("vllm", "model=Qwen/Qwen2.5-VL-7B-Instruct"), ["= 4096 tokens", "no limit_mm_per_prompt"]),
        (_argv("vllm", "model=m,max_new_tokens=8192,limit_mm_per_prompt={\"image\":8}"), ["= 8192 tokens"]),
        (_argv("vllm", "model=m,max_new_tokens=1,limit_mm_per_prompt={\"image\":8}"), []),
        (_argv("vllm", "model=m,max_new_tokens=512,limit_mm_per_prompt={\"image\":8}"), []),
        (["lmms-eval", "--model=vllm", "--model_args=model=m,max_new_tokens=1"], ["no limit_mm_per_prompt"]),
        (_argv("openai", "model_version=gpt-4o"), []),
        (["python", "my_script.py"], []),
    ],
)
def test_model_args_warnings(argv: list[str], expected: list[str]) -> None:
    warnings = model_args_warnings(TASK, argv)
    assert len(warnings) == len(expected)
    assert all(fragment in warning for fragment, warning in zip(expected, warnings))


def test_text_only_task_needs_no_image_limit() -> None:
    assert model_args_warnings(TASK, _argv("vllm", "model=m,max_new_tokens=1"), uses_images=False) == []
