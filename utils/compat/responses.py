"""Backport: `strip_responses: false` keeps a task's responses as generated (patch 0001).

lmms-eval 0.7.3's `ConfigurableTask.process_results` calls `.strip()` on every `generate_until` response
before the task's hook sees it. Where the official scorer reads raw output (HumanEval-V's `post_process`
glues an indented body-only completion to the signature, so leading whitespace decides pass or fail), the
task sets `strip_responses: false` (and `reasoning_tags: none`). The shim makes 0.7.3 honour that field:
for such a task the hook receives the responses unchanged (None becomes "", as lmms-eval does); every
other task goes through lmms-eval's own method.
"""

from __future__ import annotations

from typing import Any

NAME = "responses"
PATCHES = ("0001-task-strip-responses",)
GENERATION_TYPES = ("generate_until", "generate_visual_cot")


def present() -> bool:
    from lmms_tasks.utils.compat import task_config

    return task_config.native("strip_responses")


def raw_responses(results: Any) -> list[Any]:
    """The responses as generated: a `take_first_k` list of lists gives its first list; None becomes ""."""
    if isinstance(results, list) and results and isinstance(results[0], list):
        results = results[0]
    return ["" if r is None else r for r in results]


def install() -> bool:
    from lmms_eval.api.task import ConfigurableTask

    original = ConfigurableTask.process_results

    def process_results(self: Any, doc: Any, results: Any, full_docs: Any = None) -> Any:
        config = self.config
        if getattr(config, "strip_responses", None) is not False or self.OUTPUT_TYPE not in GENERATION_TYPES or not callable(config.process_results):
            return original(self, doc, results, full_docs)
        kwargs = {} if full_docs is None else {"full_docs": full_docs}
        return config.process_results(doc, raw_responses(results), **kwargs)

    process_results.__wrapped__ = original  # type: ignore[attr-defined]
    ConfigurableTask.process_results = process_results
    return True
