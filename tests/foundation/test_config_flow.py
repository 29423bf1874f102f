"""The task's config flows in; nothing is read back (issue 40).

A task's settings reach its hooks as arguments: lmms-eval hands the loader the task's `metadata` and the
batch step the task config (patch 0006 / the compat shim); a command (`score`, `score --from-official`,
`export-official`) adds what it knows to the config or the data source it hands over. So:

- no runtime module and no command writes `os.environ` (reading what the user set is fine);
- no runtime module keeps a module-level registry that one call fills for another to read, other than the
  caches and run records listed in `REGISTRIES` with the reason each is not a back channel;
- no runtime module reads a task YAML or imports `utils/services/taskconfig.py`, the YAML reader that only the
  commands that list tasks and the tests (exported with the benchmark PRs) use.

Checked on the source (every module, every function) and during a real lmms-eval run of a judged task, with
an audit hook that records every YAML opened and every environment write while code of ours is on the stack.
"""

from __future__ import annotations

import ast
import json
import os
import sys
from pathlib import Path

import pytest

from lmms_tasks import BENCHMARKS

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = sorted(
    [
        *ROOT.glob("utils/services/**/*.py"),
        *ROOT.glob("utils/compat/*.py"),
        *(path for benchmark in BENCHMARKS for path in ROOT.glob(f"utils/{benchmark}/*.py")),
        *ROOT.glob("lmms_tasks/*/*.py"),
    ]
)
YAML_READER = ROOT / "utils" / "services" / "taskconfig.py"  # a task's YAML by name: for the commands and tests only
COMMANDS = sorted(path for path in ROOT.glob("utils/commands/**/*.py") if "upstream" not in path.relative_to(ROOT).parts)

# Module-level state a runtime module mutates from its functions, and why none of it carries a setting from
# a command to a hook. Anything else of the kind is a back channel: hand the value over in the config.
REGISTRIES = {
    ("utils/compat/__init__.py", "_installed"): "which shims this process installed (once per process; read by `installed()` for the log)",
    ("utils/compat/__init__.py", "_done"): "the shims were installed once in this process",
    ("utils/compat/exit_status.py", "_uncaught"): "lmms-eval's own uncaught error, recorded for the exit status (written and read by the shim)",
    ("utils/services/llm_judge/judge.py", "_announced"): "log once per task, role and judge which judge scores it",
    ("utils/services/llm_judge/judge.py", "_clients"): "one HTTP client per endpoint configuration (a cache keyed by the whole configuration)",
    ("utils/services/llm_judge/judge.py", "_memo"): "finished batches keyed by their content (config, requests, replies): a cache",
    ("utils/services/llm_judge/judge.py", "_preflights"): "each endpoint/key/model that passed the preflight, once per process (a cache of the answer)",
    ("utils/services/schema.py", "_indexed"): "media files already indexed (a cache)",
    ("utils/services/schema.py", "_verified"): "media files already verified (a cache)",
    ("utils/services/status.py", "_faults"): "faults the hooks record for the exit status (hooks write, the exit status reads: the run's result)",
}
MUTATORS = {"update", "add", "append", "extend", "pop", "popitem", "clear", "setdefault", "set", "discard", "remove", "insert"}
ENVIRON_WRITERS = {"update", "pop", "popitem", "clear", "setdefault", "__setitem__", "__delitem__"}


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _is_environ(node: ast.AST) -> bool:
    """`os.environ` or a bare `environ` (from os import environ)."""
    return (isinstance(node, ast.Attribute) and node.attr == "environ" and isinstance(node.value, ast.Name) and node.value.id == "os") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


def environment_writes(tree: ast.AST) -> list[int]:
    """Lines that write the process environment: item stores/deletes, mutating methods, os.putenv/unsetenv."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)) and _is_environ(node.value):
            lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ENVIRON_WRITERS and _is_environ(node.func.value):
                lines.append(node.lineno)
            elif node.func.attr in ("putenv", "unsetenv") and isinstance(node.func.value, ast.Name) and node.func.value.id == "os":
                lines.append(node.lineno)
    return lines


def _is_mutable(value: ast.AST) -> bool:
    if isinstance(value, (ast.Dict, ast.Set, ast.List, ast.DictComp, ast.SetComp, ast.ListComp)):
        return True
    if isinstance(value, ast.Call):
        func = value.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        return name in ("dict", "set", "list", "defaultdict", "OrderedDict", "Counter", "deque", "Event")
    return False


def registries(tree: ast.Module) -> set[str]:
    """Module-level names a function of the module mutates: a mutable container changed in place, or a name
    rebound through `global`."""
    containers = set()
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and _is_mutable(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            containers |= {t.id for t in targets if isinstance(t, ast.Name)}
    found = set()
    for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        for node in ast.walk(function):
            if isinstance(node, ast.Global):
                found |= set(node.names)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
                if node.func.value.id in containers and node.func.attr in MUTATORS:
                    found.add(node.func.value.id)
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)) and isinstance(node.value, ast.Name):
                if node.value.id in containers:
                    found.add(node.value.id)
    return found


def yaml_imports(tree: ast.AST) -> list[str]:
    """What a module imports to read YAML: the yaml package, our task-YAML reader, lmms-eval's YAML loader."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name == "yaml" or a.name.endswith(".taskconfig")]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "yaml" or node.module.endswith("taskconfig"):
                found.append(node.module)
            elif node.module == "lmms_eval.utils" and any(a.name == "load_yaml_config" for a in node.names):
                found.append("lmms_eval.utils.load_yaml_config")
            elif node.module.endswith("services") and any(a.name == "taskconfig" for a in node.names):
                found.append(f"{node.module}.taskconfig")
    return found


def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


@pytest.mark.parametrize("path", RUNTIME + COMMANDS, ids=rel)
def test_no_module_writes_the_environment(path: Path) -> None:
    lines = environment_writes(parsed(path))
    assert not lines, f"{rel(path)} writes os.environ at line(s) {lines}: hand the value over in the task config or as an argument"


@pytest.mark.parametrize("path", RUNTIME, ids=rel)
def test_no_runtime_registry_carries_a_setting_to_a_hook(path: Path) -> None:
    unexplained = sorted(name for name in registries(parsed(path)) if (rel(path), name) not in REGISTRIES)
    assert not unexplained, (
        f"{rel(path)} keeps module-level state its functions fill for others to read: {unexplained}. A setting "
        "goes to the hooks in the task config (lmms-eval hands the loader `metadata` and the batch step `config`); "
        "a cache or a record of the run goes into REGISTRIES with its reason"
    )


def test_every_listed_registry_still_exists() -> None:
    """An entry whose module no longer has the state must go (the list is the truth about what remains)."""
    present = {(rel(path), name) for path in RUNTIME for name in registries(parsed(path))}
    assert set(REGISTRIES) <= present, sorted(set(REGISTRIES) - present)


@pytest.mark.parametrize("path", [p for p in RUNTIME if p != YAML_READER], ids=rel)
def test_no_runtime_module_reads_a_task_yaml(path: Path) -> None:
    found = yaml_imports(parsed(path))
    assert not found, f"{rel(path)} imports {found}: a hook gets its task's settings from the metadata or config lmms-eval hands it"


def runtime_module_names(tree: ast.AST) -> set[str]:
    """Names a module binds to runtime modules of ours (`from lmms_tasks.utils.services.llm_judge import judge`)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("lmms_tasks.utils") and ".commands" not in (node.module or ""):
            base = ROOT.joinpath(*node.module.split(".")[1:])
            names |= {a.asname or a.name for a in node.names if base.joinpath(f"{a.name}.py").is_file() or base.joinpath(a.name, "__init__.py").is_file()}
        elif isinstance(node, ast.Import):
            names |= {a.asname for a in node.names if a.asname and a.name.startswith("lmms_tasks.utils") and ".commands" not in a.name}
    return names


def test_commands_hand_settings_over_instead_of_writing_into_runtime_modules() -> None:
    """A command never assigns into a runtime module nor reaches for its private state (`judge._replays[...]`)."""
    offences = []
    for path in COMMANDS:
        tree = parsed(path)
        modules = runtime_module_names(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
                if isinstance(node.ctx, ast.Store) or (node.attr.startswith("_") and not node.attr.startswith("__")):
                    offences.append(f"{rel(path)}:{node.lineno}: {node.value.id}.{node.attr}")
    assert not offences, offences


# -- during a real run --------------------------------------------------------------------------------------

PROBE = r"""
import json, os, sys
ours = tuple(os.environ["CONFIG_FLOW_OURS"].split(os.pathsep))
log = open(os.environ["CONFIG_FLOW_LOG"], "a", encoding="utf-8")

def stack(frame):
    names = []
    while frame is not None:
        if frame.f_code.co_filename.startswith(ours):
            names.append(f"{frame.f_code.co_filename}:{frame.f_code.co_name}")
        frame = frame.f_back
    return names

def hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        name = os.fsdecode(args[0])
        base = os.path.basename(name)
        if base.endswith((".yaml", ".yml", "_yaml")) or (os.sep + "yaml_templates" + os.sep in name and "." not in base):
            log.write(json.dumps({"event": "yaml", "name": name, "stack": stack(sys._getframe(1))}) + "\n")
    elif event in ("os.putenv", "os.unsetenv"):
        writer = sys._getframe(1)
        while writer is not None and os.path.basename(writer.f_code.co_filename) == "os.py":  # os.environ's own methods
            writer = writer.f_back
        # a write counts when code of ours writes (a library that code of ours called writes for itself)
        mine = writer is not None and writer.f_code.co_filename.startswith(ours)
        log.write(json.dumps({"event": "env", "name": os.fsdecode(args[0]), "stack": stack(writer) if mine else []}) + "\n")
    log.flush()

sys.addaudithook(hook)
from lmms_eval.cli.dispatch import main  # what the `lmms-eval` console script runs

sys.argv = ["lmms-eval", *sys.argv[1:]]
sys.exit(main())
"""


@pytest.mark.slow
def test_a_judged_run_reads_no_yaml_and_writes_no_environment_from_our_code(tmp_path: Path) -> None:
    """HAERAE-Vision's original task, run by the real lmms-eval CLI with a stand-in model and judge: its loader
    and its batch step get the judge from what lmms-eval hands them, so while code of ours is on the stack no
    YAML is opened and no environment variable is written (lmms-eval itself opens the YAMLs it indexes)."""
    from lmms_tasks.utils.testing.e2e import STAND_IN_JUDGE, lmms_eval_command, offline_env, run_command
    from lmms_tasks.utils.testing.fixtures import haerae_vision as fixture
    from lmms_tasks.utils.testing.openai_server import StandInServer

    fixtures = fixture.write(tmp_path / "data")
    log = tmp_path / "audit.jsonl"
    with StandInServer(default_reply="<score>1/2</score>") as server:
        env = offline_env(server.base_url, tmp_path, fixtures.env, extra={"LMMS_TASKS_JUDGE_PROGRESS": "0", "LMMS_TASKS_JUDGE_MAX_RETRIES": "0"})
        env.update(CONFIG_FLOW_LOG=str(log), CONFIG_FLOW_OURS=os.pathsep.join(str(ROOT / part) for part in ("utils", "lmms_tasks")))
        command = lmms_eval_command("haerae_vision_original", server.base_url, tmp_path / "out")
        assert Path(command[0]).name == "lmms-eval", command  # the console script, run here under the probe
        run = run_command([sys.executable, "-c", PROBE, *command[1:]], tmp_path / "out", env=env).check()
        assert run.metric("haerae_vision_original", "haerae_vision_score") is not None
        judged = server.requests_for(model=STAND_IN_JUDGE)
    assert judged, "the judge was never asked: the run did not exercise the judged path"
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert any(e["event"] == "yaml" and not e["stack"] for e in events), "the audit hook saw no YAML opened at all: it did not observe the run"
    ours = [e for e in events if e["stack"]]
    assert not ours, "code of ours read a YAML or wrote the environment during the run:\n" + "\n".join(
        f"{e['event']} {e['name']} from {' < '.join(reversed(e['stack'][-3:]))}" for e in ours[:10]
    )


# -- the hand-over itself ------------------------------------------------------------------------------------


def test_the_loader_builds_from_the_metadata_lmms_eval_passes_and_records_into_it() -> None:
    from lmms_tasks.utils.services.data import task_loader

    seen: list[dict] = []

    class Source:
        def provenance(self, split: str | None = None) -> dict:
            return {"source": "local", "split": split}

    metadata = {"version": 1, "judge": {"model": "from-the-yaml"}}
    loaded = task_loader("t", lambda given: seen.append(given) or [{"x": 1}], source=Source(), source_split="test")(metadata=metadata, token=None)  # type: ignore[arg-type]
    assert seen == [metadata] and seen[0] is metadata  # the config's own dict: what the loader records lands in results.json
    assert metadata["data_source"] == {"source": "local", "split": "test"} and len(loaded["test"]) == 1


def test_a_hook_takes_its_judge_from_the_metadata_and_what_a_command_handed_over() -> None:
    from lmms_tasks.utils.services.llm_judge import judge

    env = {"LMMS_TASKS_JUDGE_MODEL": "env", "LMMS_TASKS_JUDGE_CONCURRENCY": "7"}
    yaml = {"judge": {"model": "yaml", "params": {"max_tokens": 9}}}
    assert judge.JudgeConfig.for_task("t", {}, "built-in", env={}).model == "built-in"
    assert judge.JudgeConfig.for_task("t", {}, "built-in", env=env).model == "env"
    config = judge.JudgeConfig.for_task("t", yaml, "built-in", {"max_tokens": 1}, env=env)
    assert (config.model, config.concurrency, dict(config.params)) == ("yaml", 7, {"max_tokens": 9})
    handed = judge.hand(yaml, judge.Handed(recorded={"model": "recorded", "cache_dir": "/r"}, options={"model": "option"}))
    config = judge.JudgeConfig.for_task("t", handed, "built-in", env=env)
    assert (config.model, config.cache_dir) == ("option", "/r")
    assert judge.handed_to(yaml) == judge.Handed() and "lmms_tasks_handed" not in yaml  # `hand` copies
    with pytest.raises(judge.JudgeConfigError, match="metadata.judge of task 't' must be a mapping"):
        judge.JudgeConfig.for_task("t", {"judge": "gpt-4o"}, env={})
    with pytest.raises(judge.JudgeConfigError, match=r"--judge-\* options: \['modle'\]"):
        judge.JudgeConfig.for_task("t", judge.hand({}, judge.Handed(options={"modle": "x"})), env={})


def test_recorded_replies_handed_over_are_used_and_nothing_is_sent(tmp_path: Path) -> None:
    from lmms_tasks.utils.services.llm_judge import judge

    config = judge.JudgeConfig(model="m", base_url="http://127.0.0.1:9/v1", api_key="EMPTY", cache_dir=str(tmp_path / "cache"), progress=False)
    requests = [judge.JudgeRequest(key="a", messages=[{"role": "user", "content": "a"}]), judge.JudgeRequest(key="b", messages=[{"role": "user", "content": "b"}])]
    replies = judge.RecordedReplies({"a": "<score>1</score>"}, source="file.csv")
    batch = judge.judge_batch("t_replayed", requests, str, config=config, output_dir=tmp_path, metadata=judge.hand({}, judge.Handed(replies=replies)))
    assert batch.outcomes["a"].content == "<score>1</score>" and "no recorded judge reply in file.csv" in (batch.outcomes["b"].error or "")
    assert batch.summary["replayed_from"] == "file.csv" and not (tmp_path / "cache").exists()


def test_a_data_source_named_by_a_command_wins_over_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lmms_tasks.utils.services.data import DataSource

    source = DataSource("b", "o/r", "main", "B_DATA", "B_REVISION")
    monkeypatch.delenv("B_DATA", raising=False)
    monkeypatch.setenv("B_REVISION", "from-env")
    assert source.local_root() is None and source.revision == "from-env"
    named = source.named(root=str(tmp_path))
    assert named.local_root() == tmp_path.resolve() and source.local_root() is None  # a copy: the original is unchanged
    assert source.named(revision="abc").revision == "abc"
    monkeypatch.delenv("B_REVISION")
    assert source.named().revision == "main" and "B_DATA" not in os.environ
