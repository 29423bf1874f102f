"""The vLLM max_new_tokens floor and a missing limit_mm_per_prompt are reported, not silently scored.

The warnings follow from the command line alone (no task's YAML is read back at run time): lmms-eval's vllm
default of 4096 is above every limit our tasks set, which the last test checks on every task YAML.
"""

from __future__ import annotations

import pytest

from lmms_tasks import BENCHMARKS, tasks_path
from lmms_tasks.utils.services.model_args import VLLM_DEFAULT_MAX_NEW_TOKENS, model_args_warnings
from lmms_tasks.utils.services.taskconfig import _index, task_config

TASK = "vlm2_bench_gc_mat"  # official max_new_tokens 512


def _argv(model: str, model_args: str) -> list[str]:
    return ["lmms-eval", "--model", model, "--model_args", model_args, "--tasks", TASK]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (_argv("vllm", "model=Qwen/Qwen2.5-VL-7B-Instruct"), ["default max_new_tokens=4096) tokens, above the benchmark's limit;", "no limit_mm_per_prompt"]),
        (_argv("vllm", "model=m,max_new_tokens=8192,limit_mm_per_prompt={\"image\":8}"), ["max_new_tokens=8192) tokens, above the benchmark's limit;"]),
        (_argv("vllm", "model=m,max_new_tokens=1,limit_mm_per_prompt={\"image\":8}"), []),
        (_argv("vllm", "model=m,max_new_tokens=512,limit_mm_per_prompt={\"image\":8}"), ["max_new_tokens=512) tokens, above the benchmark's limit wherever"]),
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


def test_the_warnings_read_no_task_configuration() -> None:
    """A task name alone: the warnings come from the command line, not from the task's YAML read back."""
    warnings = model_args_warnings("a_task_with_no_yaml", _argv("vllm", "model=m"))
    assert [w.split(":")[0] for w in warnings] == ["a_task_with_no_yaml"] * 2 and "4096" in warnings[0]


def test_lmms_evals_vllm_default_is_above_every_task_limit() -> None:
    """What lets the warning say "above the benchmark's limit" for the default without reading the task:
    every generating task of ours sets a max_new_tokens below lmms-eval's vllm default."""
    limits = {}
    for task in _index(tasks_path(), tuple(BENCHMARKS)):
        config = task_config(task)
        if config.get("output_type") == "generate_until":
            limits[task] = int((config.get("generation_kwargs") or {})["max_new_tokens"])
    assert len(limits) > 20 and all(1 < limit < VLLM_DEFAULT_MAX_NEW_TOKENS for limit in limits.values()), limits
