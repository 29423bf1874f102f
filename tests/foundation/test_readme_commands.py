"""The README's OpenAI-compatible commands are run verbatim: each block marked `<!-- readme-test: NAME -->`
runs in bash against the stand-in server (OPENAI_API_BASE points at it) on NAME's generated fixtures, and
every task and group it names must come out with results."""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from lmms_tasks.utils.testing import fixtures as fixture_package
from lmms_tasks.utils.testing.e2e import offline_env
from lmms_tasks.utils.testing.openai_server import StandInServer

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCK = re.compile(r"<!-- readme-test: (\w+) -->\n```bash\n(.*?)```", re.DOTALL)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _blocks() -> list[tuple[str, str]]:
    return BLOCK.findall(README.read_text(encoding="utf-8"))


def _named_tasks(block: str) -> set[str]:
    names: set[str] = set()
    for match in re.finditer(r"--tasks\s+(\S+)", block):
        names.update(shlex.split(match.group(1))[0].split(","))
    return names


def test_every_benchmark_has_a_tested_readme_command() -> None:
    assert sorted(name for name, _ in _blocks()) == ["haerae_vision", "humaneval_v", "vlm2_bench"]


@pytest.mark.parametrize(("benchmark", "block"), _blocks(), ids=[name for name, _ in _blocks()])
def test_readme_command_runs_and_scores_every_named_task(benchmark: str, block: str, tmp_path: Path) -> None:
    module = __import__(f"{fixture_package.__name__}.{benchmark}", fromlist=["write"])
    fixtures = module.write(tmp_path / "data")
    with StandInServer(default_reply="") as server:
        module.script_demo(server, fixtures)
        env = offline_env(server.base_url, tmp_path, data_env=fixtures.env)
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        env = dict(env)  # the commands as written
        proc = subprocess.run(["bash", "-c", "set -euo pipefail\n" + block], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    scored: set[str] = set()
    for path in glob.glob(str(tmp_path / "**" / "*_results.json"), recursive=True):
        results = json.loads(Path(path).read_text(encoding="utf-8"))
        for section in ("results", "groups"):
            scored.update(name for name, values in results.get(section, {}).items() if any("," in key for key in values))
        # A group without a cross-task metric (humaneval_v: the paper reports settings separately) is
        # scored when all its subtasks are.
        scored.update(group for group, subtasks in results.get("group_subtasks", {}).items() if subtasks and set(subtasks) <= scored)
    missing = _named_tasks(block) - scored
    assert not missing, f"no results for {sorted(missing)}:\n{proc.stderr[-3000:]}"
