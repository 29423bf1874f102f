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
from lmms_tasks.utils.testing.e2e import console_script
from lmms_tasks.utils.testing.stand_in import READY


def run_cli(*args: str, **kwargs: Any) -> subprocess.CompletedProcess:
    kwargs["env"] = dict(kwargs.get("env", os.environ))
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
    ours = {name: entry["type"] for name, entry in index.items() if name.startswith(tuple(BENCHMARKS)) and entry["type"] != "tag"}
    assert {name: row["kind"] for name, row in rows.items()} == {n: ("group" if t == "group" else "task") for n, t in ours.items()}
    # a group's members: a tag it lists stands for the tasks lmms-eval registered under it
    tags = {name: entry["task"] for name, entry in index.items() if entry["type"] == "tag"}
    assert rows["vlm2_bench_gc"]["members"] == sorted(tags["vlm2_bench_gc_tasks"]) == ["vlm2_bench_gc_mat", "vlm2_bench_gc_trk"]
    assert sorted(rows["humaneval_v"]["members"]) == sorted(tags["humaneval_v_tasks"]) and len(tags["humaneval_v_tasks"]) == 4
    assert rows["vlm2_bench"]["members"] == ["vlm2_bench_gc", "vlm2_bench_oc", "vlm2_bench_pc"]
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


def _start_stand_in(args: list[str], env: dict[str, str]) -> tuple[subprocess.Popen, list[str]]:
    """The `stand-in` command, read up to its ready line: (process, the lines it printed)."""
    proc = subprocess.Popen([sys.executable, "-m", "lmms_tasks", "stand-in", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    printed = []
    for line in proc.stdout:
        if line.startswith(READY):
            return proc, printed
        printed.append(line.rstrip("\n"))
    pytest.fail(f"stand-in ended before it was ready: {proc.stderr.read()[-2000:]}")


def _post(base_url: str, model: str) -> int:
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": "hello"}]}).encode()
    request = urllib.request.Request(base_url + "/chat/completions", body, {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - 127.0.0.1
            assert json.loads(response.read())["choices"][0]["message"]["role"] == "assistant"
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_stand_in_prints_exports_and_answers(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LMMS_TASKS_JUDGE_"))}
    proc, printed = _start_stand_in(["--data-dir", str(tmp_path / "stand_in")], env)
    try:
        exports: dict[str, str] = {}
        for line in printed:
            if line.startswith("export "):
                exports.update(part.split("=", 1) for part in line.split()[1:] if "=" in part)
        for variable in ("OPENAI_API_BASE", "OPENAI_API_KEY", "LMMS_TASKS_JUDGE_BASE_URL", "LMMS_TASKS_JUDGE_MODEL", "VLM2_BENCH_DATA", "HUMANEVAL_V_DATA", "HUMANEVAL_V1_DATA", "HAERAE_VISION_DATA"):
            assert variable in exports, variable
        for variable in ("VLM2_BENCH_DATA", "HUMANEVAL_V_DATA", "HAERAE_VISION_DATA"):
            assert Path(exports[variable]).is_dir()
        (unset,) = [line for line in printed if line.startswith("unset ")]
        assert unset.split()[1:] == list(exports)  # the line that undoes every export, nothing else
        assert exports["OPENAI_API_BASE"].startswith("http://127.0.0.1:")
        base = exports["OPENAI_API_BASE"]
        # the README's model, the stand-in's own and the judge are served; any other name is 404, as from OpenAI
        assert [_post(base, m) for m in ("gpt-4o-2024-11-20", "stand-in-vlm", "stand-in-judge", "gpt-4o-2024-11-2", "stand-in-judg")] == [200, 200, 200, 404, 404]
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert "after 5 requests" in out  # the 404s are logged as requests too
    assert (tmp_path / "stand_in" / "data").is_dir()  # a folder it was given is kept


def test_stand_in_refuses_a_mistyped_judge_before_inference_and_cleans_up(tmp_path: Path) -> None:
    """Offline as against a real server: a mistyped judge model fails the preflight (404) before any model
    request, the run exits 1 with that one line last and no traceback; the stand-in serves only the names it
    announces (`--model` adds one) and removes the folder it made itself when it stops."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LMMS_TASKS_JUDGE_"))}
    proc, printed = _start_stand_in(["--model", "my-vlm"], {**env, "TMPDIR": str(scratch)})
    try:
        exports = dict(part.split("=", 1) for line in printed if line.startswith("export ") for part in line.split()[1:])
        (made,) = list(scratch.iterdir())
        assert _post(exports["OPENAI_API_BASE"], "my-vlm") == 200 and _post(exports["OPENAI_API_BASE"], "gpt-4o-2024-11-20") == 404
        run_env = {**env, **exports, "LMMS_TASKS_JUDGE_MODEL": "stand-in-judgee", "HOME": str(tmp_path / "home")}
        run = subprocess.run(
            [console_script(), "--model", "openai", "--model_args", "model_version=my-vlm", "--tasks", "haerae_vision_original", "--limit", "2",
             "--include_path", tasks_path(), "--output_path", str(tmp_path / "out")],
            capture_output=True, text=True, env=run_env, cwd=tmp_path, timeout=600,
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    output = (run.stdout + run.stderr).strip()
    assert run.returncode == 1, output[-3000:]
    assert "Traceback" not in output and "DataError" not in output
    last = output.splitlines()[-1]
    assert "haerae_vision_original: the judge stand-in-judgee" in last and "HTTP 404" in last, last
    assert "after 2 requests" in out  # the two above: no model request was sent
    assert not made.exists()  # the folder it made is gone


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
    from lmms_tasks.utils.commands.score import default_output_dir, records_note

    run = tmp_path / "results"
    samples = run / "model" / "20260101_000000_samples_t.jsonl"
    assert default_output_dir(samples) == run / "model" / "rescored"  # never the samples' own folder
    beside = records_note(default_output_dir(samples), run)
    assert str(run / "model" / "rescored" / "judgements") in beside and f"{run / 'judgements'}/ are left unchanged" in beside
    assert "replaced" in records_note(run, run)
    assert "no results file" in records_note(default_output_dir(samples), None)
