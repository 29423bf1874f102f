"""Each variant's parameters are declared in its YAML (issue 54): no runtime code reads a setting or k back
from a task name. The runtime is utils/ without the test machinery (utils/testing) and the upstream
exporter (utils/commands/upstream, which rewrites files, not task names)."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

from lmms_tasks import tasks_path
from lmms_tasks.utils.services.taskconfig import task_config

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = [p for p in sorted((ROOT / "utils").rglob("*.py")) if not p.relative_to(ROOT).as_posix().startswith(("utils/testing/", "utils/commands/upstream/"))]
PASS_SUFFIX = re.compile(r"^\w*_pass\d+$")  # "_pass3", or a task name keyed by its k ("humaneval_v1_pass10")


def offences(source: str) -> list[str]:
    """The name-reading constructs of one file's code (comments and docstrings are not code)."""
    found = []
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    for position, token in enumerate(tokens):
        if token.type == tokenize.NAME and token.string == "removesuffix":
            found.append(f"line {token.start[0]}: removesuffix")
        if token.type != tokenize.STRING:
            continue
        text = re.sub(r"^[rbuf]*('''|\"\"\"|'|\")|('''|\"\"\"|'|\")$", "", token.string, flags=re.I)
        if PASS_SUFFIX.match(text) or re.search(r"['\"]_pass\d+['\"]", text):  # also inside an f-string's braces
            found.append(f"line {token.start[0]}: literal {token.string}")
        before = [t.string for t in tokens[max(0, position - 3) : position]]
        if before[-2:] == ["endswith", "("] and text.startswith("_pass"):
            found.append(f"line {token.start[0]}: endswith({token.string})")
        if before[-2:] == ["replace", "("] and re.fullmatch(r"_[a-z0-9_]+", text):  # one task name made from another
            found.append(f"line {token.start[0]}: replace({token.string}, ...)")
    return found


@pytest.mark.parametrize(
    "source,expected",
    [
        ("k = 3 if task.endswith('_pass3') else 1\n", ["line 1: literal '_pass3'", "line 1: endswith('_pass3')"]),
        ('setting = name.removesuffix("_pass10")\n', ["line 1: removesuffix", 'line 1: literal "_pass10"']),
        ("ok = task.endswith('_passive')\n", ["line 1: endswith('_passive')"]),
        ("t = f\"v2t{'_pass3' if n > 1 else ''}\"\n", ["line 1: literal f\"v2t{'_pass3' if n > 1 else ''}\""]),
        ('"""humaneval_v_v2c_pass3 -> v2c"""\nx = 1  # _pass3\n', []),
        ('TASKS = {"humaneval_v1": 1, "humaneval_v1_pass10": 10}\n', ['line 1: literal "humaneval_v1_pass10"']),
        ('source = name.replace("_t2c", "_v2t", 1)\n', ['line 1: replace("_t2c", ...)']),
        ('note = "the scores of `humaneval_v1_pass10`, as run"\n', []),
        ('source = path.name.replace("_executed.json", ".json")\n', []),
    ],
)
def test_the_check_finds_what_it_looks_for(source: str, expected: list[str]) -> None:
    assert offences(source) == expected


def test_no_runtime_code_reads_a_setting_or_k_from_a_name() -> None:
    assert len(RUNTIME) > 50
    found = {p.relative_to(ROOT).as_posix(): o for p in RUNTIME if (o := offences(p.read_text(encoding="utf-8")))}
    assert found == {}


def test_every_humaneval_v_task_declares_its_setting_and_k() -> None:
    """The setting and k each task's YAML declares, against what the task is documented to be (its comment)."""
    expected = {
        "humaneval_v_v2c": ("v2c", 1),
        "humaneval_v_v2c_pass3": ("v2c", 3),
        "humaneval_v_v2c_cot": ("v2c_cot", 1),
        "humaneval_v_v2c_cot_pass3": ("v2c_cot", 3),
        "humaneval_v_gt_t2c": ("gt_t2c", 1),
        "humaneval_v_gt_t2c_pass3": ("gt_t2c", 3),
        "humaneval_v_v2t": ("v2t", 1),
        "humaneval_v_v2t_pass3": ("v2t", 3),
        "humaneval_v_t2c": ("t2c", 1),
        "humaneval_v_t2c_pass3": ("t2c", 3),
        "humaneval_v1": ("v1", 1),
        "humaneval_v1_pass10": ("v1", 10),
    }
    tasks = sorted(p.stem for p in (Path(tasks_path()) / "humaneval_v").glob("humaneval_v*.yaml") if p.stem != "humaneval_v")
    assert tasks == sorted(expected)
    for task, (setting, k) in expected.items():
        kwargs = task_config(task)["dataset_kwargs"]
        assert (kwargs["setting"], kwargs["k"]) == (setting, k), task
        # V2T2C step 2 names the step-1 task it reads (same k), never makes that name from its own
        assert kwargs.get("descriptions_from") == ({1: "humaneval_v_v2t", 3: "humaneval_v_v2t_pass3"}[k] if setting == "t2c" else None), task
        metrics = {e["metric"] for e in task_config(task)["metric_list"]}
        assert (f"strong_coder_pass_at_{k}" if setting == "v2t" else f"pass@{k}") in metrics, task


def test_a_t2c_task_without_the_v2t_task_it_reads_is_refused_before_any_data() -> None:
    from lmms_tasks.utils.humaneval_v.hooks import load_subtask
    from lmms_tasks.utils.services.data import DataError

    with pytest.raises(DataError, match=r"humaneval_v_t2c: dataset_kwargs.descriptions_from is None"):
        load_subtask({}, subtask="t2c", setting="t2c", k=1)
