"""What a new user meets first: `python -m lmms_tasks` without arguments, `tasks`, `stand-in`, `demo --help`
and where the demo and `score` put their files."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from lmms_tasks import BENCHMARKS, tasks_path
from lmms_tasks.__main__ import COMMANDS
from lmms_tasks.utils.testing import demo as demo_module
from lmms_tasks.utils.testing.stand_in import READY


def run_cli(*args: str, **kwargs: Any) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lmms_tasks", *args], capture_output=True, text=True, timeout=300, check=False, **kwargs)


def test_no_arguments_lists_every_command() -> None:
    proc = run_cli()
    assert proc.returncode == 2
    assert "required" not in proc.stderr and "rest" not in proc.stderr
    listed = re.findall(r"^  (\S+)\s{2,}", proc.stderr, flags=re.M)
    assert listed == list(COMMANDS)
    assert "lmms-tasks" in proc.stderr  # the console command is named


def test_tasks_lists_every_task_and_group_with_its_needs() -> None:
    proc = run_cli("tasks", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {row["name"]: row for row in json.loads(proc.stdout)}
    from lmms_eval.tasks import TaskManager

    index = TaskManager(verbosity="ERROR", include_path=tasks_path(), include_defaults=False).task_index
    ours = {name: entry["type"] for name, entry in index.items() if name.startswith(tuple(BENCHMARKS))}
    assert {name: row["kind"] for name, row in rows.items()} == {n: ("group" if t == "group" else "task") for n, t in ours.items()}
    # the needs, against the facts the run enforces
    judged = {n for n, r in rows.items() if r["kind"] == "task" and r["judge"] and not r["judge"].startswith("with")}
    assert judged == {"vlm2_bench_pc_vid", "haerae_vision_original", "haerae_vision_explicit"}
    executes = {n for n, r in rows.items() if r["kind"] == "task" and r["code_execution"] == "HUMANEVAL_V_ALLOW_CODE_EXECUTION=1"}
    assert executes == {n for n in rows if n.startswith("humaneval_v") and rows[n]["kind"] == "task" and "v2t" not in n}
    assert {n for n, r in rows.items() if r["prior_run"]} == {"humaneval_v_t2c", "humaneval_v_t2c_pass3"}
    assert rows["haerae_vision"]["judge"] and rows["humaneval_v"]["code_execution"] and not rows["vlm2_bench_gc"]["judge"]


def test_readme_task_table_is_the_tasks_command_output() -> None:
    """The README's table of every task is `python -m lmms_tasks tasks` verbatim, so the two cannot disagree."""
    from lmms_tasks.utils.commands.tasks import entries, render

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert render(entries()) in readme


def test_stand_in_prints_exports_and_answers(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LMMS_TASKS_JUDGE_"))}
    proc = subprocess.Popen(
        [sys.executable, "-m", "lmms_tasks", "stand-in", "--data-dir", str(tmp_path / "stand_in")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        exports: dict[str, str] = {}
        for line in proc.stdout:
            if line.startswith(READY):
                break
            if line.startswith("export "):
                exports.update(part.split("=", 1) for part in line.split()[1:] if "=" in part)
        else:
            pytest.fail(f"stand-in ended before it was ready: {proc.stderr.read()[-2000:]}")
        for variable in ("OPENAI_API_BASE", "OPENAI_API_KEY", "LMMS_TASKS_JUDGE_BASE_URL", "LMMS_TASKS_JUDGE_MODEL", "VLM2_BENCH_DATA", "HUMANEVAL_V_DATA", "HUMANEVAL_V1_DATA", "HAERAE_VISION_DATA"):
            assert variable in exports, variable
        for variable in ("VLM2_BENCH_DATA", "HUMANEVAL_V_DATA", "HAERAE_VISION_DATA"):
            assert Path(exports[variable]).is_dir()
        assert exports["OPENAI_API_BASE"].startswith("http://127.0.0.1:")
        body = json.dumps({"model": "gpt-4o-2024-11-20", "messages": [{"role": "user", "content": "hello"}]}).encode()
        request = urllib.request.Request(exports["OPENAI_API_BASE"] + "/chat/completions", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - 127.0.0.1
            reply = json.loads(response.read())
        assert reply["choices"][0]["message"]["role"] == "assistant"
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert "after 1 requests" in out


def test_demo_help_speaks_to_users() -> None:
    text = run_cli("demo", "--help").stdout
    for internal in ("DEMO_STAGES", "stage_env", "fixture module", "RunResult", "script_demo"):
        assert internal not in text
    assert "--work-dir" in text and "kept" in text


def test_demo_keeps_its_folder_and_says_where(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Without --work-dir the demo's folder survives it (the report links into it) and its path is printed."""
    seen = []

    def fake_run_demo(benchmarks: list[str], work_dir: Path, num_processes: int = 1, quiet: bool = False, models: int = 1) -> Any:
        (work_dir / "results").mkdir(parents=True)
        seen.append(work_dir)
        return demo_module.DemoOutcome(run_dirs={demo_module.DEMO_MODELS[0]: work_dir / "results"})

    monkeypatch.setattr(demo_module, "run_demo", fake_run_demo)
    monkeypatch.setattr(demo_module.tempfile, "tempdir", str(tmp_path))
    assert demo_module.main(["--no-report"]) == 0
    (work,) = seen
    assert (work / "results").is_dir()
    printed = capsys.readouterr().out
    assert f"kept in {work}" in printed


class _IgnoreTags(yaml.SafeLoader):
    """Reads a task YAML without resolving its `!function` tags."""


_IgnoreTags.add_multi_constructor("!", lambda loader, suffix, node: None)


def test_every_alias_starts_with_its_task_name() -> None:
    """lmms-eval's printed table shows a task's alias instead of its name: ours begin with the name."""
    aliased = 0
    for path in Path(tasks_path()).glob("*/*.yaml"):
        config = yaml.load(path.read_text(encoding="utf-8"), Loader=_IgnoreTags) or {}
        for key, name_key in (("task_alias", "task"), ("group_alias", "group")):
            if key in config:
                assert str(config[key]).startswith(config[name_key]), (path, config[key])
                aliased += 1
    assert aliased >= 2  # HAERAE-Vision's two variants carry one


def test_score_says_where_its_records_go(tmp_path: Path) -> None:
    from lmms_tasks.utils.commands.score import records_note

    run = tmp_path / "results"
    beside = records_note(run / "model", run)
    assert str(run / "model" / "judgements") in beside and f"{run / 'judgements'}/ are left unchanged" in beside
    assert "replaced" in records_note(run, run)
