"""lmms-tasks: lmms-eval task definitions for VLM2-Bench, HumanEval-V and HAERAE-Vision.

This directory is the `--include_path` root: one folder per benchmark. The shared library lives in
`lmms_tasks.utils` (the repository's `utils/`), the shared YAML pieces in `lmms_tasks.yaml_templates`.
"""

from __future__ import annotations

import os

__version__ = "0.1.0"

BENCHMARKS = ("vlm2_bench", "humaneval_v", "haerae_vision")

# Where the tasks' messages send a user for what lmms-eval itself does not do. `UPSTREAM_HELP` is what the
# copy contributed to lmms-eval says instead (`export-upstream` writes it as that package's `HELP`): there
# are no `python -m lmms_tasks` commands and no docs/ of ours there.
HELP = {
    "judge_docs": "docs/JUDGE.md",
    "rescore": "`python -m lmms_tasks score` on the samples file scores them again (finished judgements and executions come from the cache)",
    "media_stats": "`python -m lmms_tasks media-stats {task}` prints the value this data needs",
}
UPSTREAM_HELP = {
    "judge_docs": "the task's README",
    "rescore": "running the evaluation again scores them again (finished judgements and executions come from the cache; lmms-eval's --use_cache spares the model requests)",
    "media_stats": "set it to the most images one request of {task} carries",
}


def tasks_path() -> str:
    """The directory to pass to `lmms-eval --include_path`."""
    return os.path.dirname(os.path.abspath(__file__))


from . import tasks as tasks  # noqa: E402  (LMMS_EVAL_PLUGINS=lmms_tasks finds the task root through it: tasks.py)
