"""`LMMS_EVAL_PLUGINS=lmms_tasks` (lmms-eval's plugin convention) registers exactly the tasks `--include_path
"$(lmms-tasks path)"` does, through the real `lmms-eval` command: the same wildcards select the same names."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lmms_tasks import tasks_path

from .test_packaging import EXPECTED_TASKS

pytestmark = pytest.mark.include_path_only


def _selected(tmp_path: Path, extra_args: list[str], plugins: str | None) -> list[str]:
    env = {k: v for k, v in dict(os.environ).items() if k not in ("LMMS_EVAL_PLUGINS", "OPENAI_API_KEY")}
    if plugins:
        env["LMMS_EVAL_PLUGINS"] = plugins
    # no API key: the run stops when the model is built, after lmms-eval has printed the tasks it selected
    command = [
        sys.executable,
        "-m",
        "lmms_eval",
        "--model",
        "openai",
        "--tasks",
        "humaneval_v*,vlm2_bench*,haerae_vision*",
        "--limit",
        "1",
        *extra_args,
    ]
    out = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    printed = out.stdout + out.stderr
    found = re.search(r"Selected Tasks: (\[.*?\])", printed)
    assert found, printed[-3000:]
    return sorted(ast.literal_eval(found.group(1)))


def test_the_plugin_route_registers_the_tasks_include_path_does(tmp_path: Path) -> None:
    by_plugin = _selected(tmp_path, [], "lmms_tasks")
    by_include_path = _selected(tmp_path, ["--include_path", tasks_path()], None)
    assert by_plugin == by_include_path
    assert set(EXPECTED_TASKS) <= set(by_plugin)
