"""Warnings about model arguments that would silently change a benchmark's numbers.

lmms-eval's vLLM backend generates up to `max(task max_new_tokens, model_args max_new_tokens)` tokens (default 4096, above every limit these tasks set), so each benchmark's official limit is lifted unless the user passes `max_new_tokens=1`. Without `limit_mm_per_prompt`,
vLLM's V1 engine (vLLM >= 0.8, what `.[vllm]` requires) accepts up to 999 items of each modality per request
and sizes its multimodal memory for that many; the data's own maximum (`media-stats`) saves that memory. Neither is visible to a task's hooks: lmms-eval hands
the loader only the task's `metadata`, so the loader (which runs when the task loads, before any inference)
reads the command line and says so, loudly, once per task; no task's configuration is read back.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from lmms_tasks import HELP
from lmms_tasks.utils.services.logging import logger

VLLM_MODELS = ("vllm", "vllm_chat")
OPENAI_UNSENT = ("top_k",)  # sampling keys lmms-eval's chat `openai` model (0.7.3) never sends
VLLM_DEFAULT_MAX_NEW_TOKENS = 4096


def _option(argv: Sequence[str], name: str) -> str | None:
    for index, arg in enumerate(argv):
        if arg == name and index + 1 < len(argv):
            return argv[index + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def model_args_warnings(task: str, argv: Sequence[str] | None = None, uses_images: bool = True) -> list[str]:
    """What is wrong with the launching command line for `task` (empty when nothing is, or no CLI)."""
    argv = list(sys.argv if argv is None else argv)
    if _option(argv, "--model") not in VLLM_MODELS:
        return []
    from lmms_eval.utils import simple_parse_args_string

    model_args = simple_parse_args_string(_option(argv, "--model_args") or "")
    warnings: list[str] = []
    floor = int(model_args.get("max_new_tokens", VLLM_DEFAULT_MAX_NEW_TOKENS))
    if floor > 1:  # 1 is below every limit: each task's own applies
        given = f"max_new_tokens={floor}" if "max_new_tokens" in model_args else f"its default max_new_tokens={floor}"
        lifted = "above the benchmark's limit" if floor >= VLLM_DEFAULT_MAX_NEW_TOKENS else "above the benchmark's limit wherever that is lower"
        warnings.append(
            f"{task}: lmms-eval's vllm backend will generate up to max(the task's limit, {given}) tokens, {lifted}; "
            "pass max_new_tokens=1 in --model_args so each task's own limit applies"
        )
    if uses_images and "limit_mm_per_prompt" not in model_args:
        warnings.append(
            f"{task}: no limit_mm_per_prompt in --model_args: vLLM (V1 engine, >= 0.8) then accepts up to 999 images per "
            "request and reserves memory for that many; to reserve only what this data needs, "
            + HELP["media_stats"].format(task=task)
        )
    return warnings


@functools.cache
def warn_about_model_args(task: str, uses_images: bool = True) -> tuple[str, ...]:
    """Log `model_args_warnings` once per task and process; returns them (for tests)."""
    warnings = tuple(model_args_warnings(task, uses_images=uses_images))
    for warning in warnings:
        logger.warning(warning)
    return warnings


def unsent_sampling_warning(task: str, model: str | None, generation_kwargs: Mapping[str, Any] | None) -> str | None:
    """What `--model openai` did not send of the task's `generation_kwargs` (None: it sent all that changes sampling)."""
    unsent = [f"{k}={(generation_kwargs or {})[k]}" for k in OPENAI_UNSENT if model == "openai" and k in (generation_kwargs or {})]
    return f"{task}: lmms-eval's openai model does not send {', '.join(unsent)} from the task's generation_kwargs: its samples were drawn without it; --model vllm sends it" if unsent else None
