"""lmms-tasks: lmms-eval task definitions for VLM2-Bench, HumanEval-V and HAERAE-Vision.

This directory is the `--include_path` root: one folder per benchmark. The shared library lives in
`lmms_tasks.utils` (the repository's `utils/`), the shared YAML pieces in `lmms_tasks.yaml_templates`.
"""

from __future__ import annotations

import os

__version__ = "0.1.0"

BENCHMARKS = ("vlm2_bench", "humaneval_v", "haerae_vision")


def tasks_path() -> str:
    """The directory to pass to `lmms-eval --include_path`."""
    return os.path.dirname(os.path.abspath(__file__))
