"""Adding a VLM2-Bench subtask of an existing kind takes its YAML, one row of the subtask table and one row of the
fixture spec (issue 40). In a copy of the package (task folder, library, templates) imported instead of the
installed one, the test writes exactly those three things for a GC subtask and runs the real commands: the
fixture writer, `lmms-eval --tasks vlm2_bench_gc` through the copy's `--include_path`, `tasks`, `report` and
`export-official`. The new subtask is loaded, asked and scored, is a member of its family group (whose mean
covers it), and shows in the listing, the report and the official result tree at the folder its row names."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lmms_tasks import tasks_path
from lmms_tasks.utils.testing.e2e import offline_env, run_lmms_eval
from lmms_tasks.utils.testing.openai_server import StandInServer

pytestmark = pytest.mark.e2e

REPO = Path(tasks_path()).parent
NEW = "gc_new"
# The three additions, each as a developer would write it.
NEW_YAML = f"""task: vlm2_bench_{NEW}
tag: vlm2_bench_gc_tasks
dataset_kwargs: {{subtask: {NEW}, kind: tf_gc}}
include: [../yaml_templates/vlm2_bench_tf_gc, _default_template_yaml]
"""
NEW_TABLE_ROW = f"{NEW},gc,yes,GC-New,code/gc/test/test_res/test_new,code/gc/eval/eval_tf_batch_pair_3acc.py" + "," * 11 + "\n"
NEW_FIXTURE_ROW = f'    "{NEW}": [("gcn1", "T", 2, {{}}), ("gcn1", "F", 2, {{}}), ("gcn2", "T", 2, {{}}), ("gcn2", "F", 2, {{}})],\n'
SPEC_OPENING = "_SPEC: dict[str, list[tuple[Any, Any, int, dict[str, Any]]]] = {\n"
# The new subtask's replies: pair gcn1 right, pair gcn2 wrong (its F answered T): pair accuracy 50.
REPLIES = {("gcn1", "T"): "T", ("gcn1", "F"): "F", ("gcn2", "T"): "T", ("gcn2", "F"): "T"}


def package_copy(root: Path) -> Path:
    """`root/lmms_tasks`: the package laid out as installed (the library at lmms_tasks/utils, the templates at
    lmms_tasks/yaml_templates); with `root` first on PYTHONPATH every `lmms_tasks` import comes from it."""
    ignore = shutil.ignore_patterns("__pycache__")
    package = root / "lmms_tasks"
    shutil.copytree(REPO / "lmms_tasks", package, ignore=ignore, symlinks=False)  # yaml_templates: the link's files
    shutil.copytree(REPO / "utils", package / "utils", ignore=ignore)
    return package


def add_subtask(package: Path) -> None:
    """Exactly the three additions: the YAML, one table row, one fixture row."""
    (package / "vlm2_bench" / f"vlm2_bench_{NEW}.yaml").write_text(NEW_YAML, encoding="utf-8")
    table = package / "utils" / "vlm2_bench" / "subtasks.csv"
    table.write_text(table.read_text(encoding="utf-8") + NEW_TABLE_ROW, encoding="utf-8")
    fixture = package / "utils" / "testing" / "fixtures" / "vlm2_bench.py"
    source = fixture.read_text(encoding="utf-8")
    assert source.count(SPEC_OPENING) == 1
    fixture.write_text(source.replace(SPEC_OPENING, SPEC_OPENING + NEW_FIXTURE_ROW), encoding="utf-8")


def python(code_or_args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, *code_or_args], env=dict(env), cwd=cwd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def test_a_new_subtask_is_its_yaml_one_table_row_and_one_fixture_row(tmp_path: Path) -> None:
    package = package_copy(tmp_path / "site")
    add_subtask(package)
    env_path = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), *filter(None, [os.environ.get("PYTHONPATH")])])}
    write = (
        "import json, sys, lmms_tasks.utils.vlm2_bench as v\n"
        "from lmms_tasks.utils.testing.fixtures import vlm2_bench as f\n"
        "fs = f.write(sys.argv[1], videos={})\n"
        "print(json.dumps({'library': v.__file__, 'records': {s: len(r) for s, r in fs.records.items()}}))\n"
    )
    written = json.loads(python(["-c", write, str(tmp_path / "data")], env_path, tmp_path).stdout.splitlines()[-1])
    assert Path(written["library"]).is_relative_to(package)  # the copy, not the installed package
    assert written["records"][NEW] == 4

    with StandInServer(default_reply="T") as server:
        for (q_id, gt), reply in REPLIES.items():
            server.script(f"[{NEW}:{q_id}:{gt}]", reply)
        env = offline_env(server.base_url, tmp_path, {"VLM2_BENCH_DATA": str(tmp_path / "data")}, extra={"PYTHONPATH": env_path["PYTHONPATH"]})
        run = run_lmms_eval("vlm2_bench_gc", server.base_url, tmp_path / "out", env=env, include_path=str(package), cwd=tmp_path).check()
        asked = [r.text for r in server.requests if f"[{NEW}:" in r.text]

    task = f"vlm2_bench_{NEW}"
    assert len(asked) == 4 and len(run.samples[task]) == 4
    config = run.results["configs"][task]
    assert config["dataset_kwargs"] == {"subtask": NEW, "kind": "tf_gc"}
    assert "jsonl/gc/vanilla/gc_new.jsonl" in config["metadata"]["data_source"]["files"]  # what the shared loader read, recorded
    assert run.metric(task, "vlm2_score") == 50.0 and run.metric(task, "tf_n_pairs") == 2
    assert sorted(run.results["group_subtasks"]["vlm2_bench_gc"]) == ["vlm2_bench_gc_mat", f"vlm2_bench_{NEW}", "vlm2_bench_gc_trk"]
    members = [run.metric(t, "vlm2_score") for t in ("vlm2_bench_gc_mat", "vlm2_bench_gc_trk", task)]
    assert run.metric("vlm2_bench_gc", "vlm2_score") == pytest.approx(sum(members) / 3)

    listing = python(["-m", "lmms_tasks", "tasks"], env_path, tmp_path).stdout
    assert f"| `vlm2_bench_gc` = `vlm2_bench_gc_mat`, `{task}`, `vlm2_bench_gc_trk` | group |" in listing

    python(["-m", "lmms_tasks", "report", str(tmp_path / "out"), "--out", str(tmp_path / "report")], env_path, tmp_path)
    report = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    header = next(line for line in report.splitlines() if line.startswith("| Row | Source |"))
    cells = [c.strip() for c in header.strip("|").split("|")]
    run_row = next(line for line in report.splitlines() if line.startswith("| ") and "| run |" in line)
    assert cells[cells.index("PC-VID") + 1] == "GC-New"  # the table's order: its row comes last
    assert [c.strip() for c in run_row.strip("|").split("|")][cells.index("GC-New")] == "50.00"

    python(["-m", "lmms_tasks", "export-official", str(tmp_path / "out"), "--out", str(tmp_path / "official")], env_path, tmp_path)
    (answers,) = (tmp_path / "official" / "vlm2_bench" / "code/gc/test/test_res/test_new").glob("*_answers.jsonl")
    assert [json.loads(line)["model_answer"] for line in answers.read_text(encoding="utf-8").splitlines()] == ["T", "F", "T", "T"]
