"""The suite's start-up hook (utils/testing/startup_hook.py).

Its cache of lmms-eval's built-in task index: a later process gets what the real method returns, and the real
method runs again whenever anything it reads or logs could differ. A small stand-in `lmms_eval` package (its
TaskManager indexes its own `tasks/` folder as lmms-eval's does, YAML includes and all) keeps each process to a
fraction of a second; the hook is the one the suite's runs get.

Its deferred imports: a named module's code runs once, when something other than what the import system set is
first read, and behaves as if imported; through the real lmms-eval and torchvision, `evaluate` stays unrun."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lmms_tasks.utils.testing.startup_hook import DEFER_IMPORTS_ENV, INDEX_CACHE_ENV, PRELOAD_ENV, SITE_DIR, hooked, unhooked

FAKE = {
    "lmms_eval/__init__.py": "",
    "lmms_eval/api/__init__.py": "",
    "lmms_eval/api/group.py": "",
    "lmms_eval/utils.py": """
        import os

        import yaml


        def ignore_constructor(loader, node):
            return node


        def load_yaml_config(yaml_path=None, yaml_config=None, yaml_dir=None, mode="full"):
            yaml.add_constructor("!function", ignore_constructor)
            with open(yaml_path, "rb") as fh:
                config = yaml.full_load(fh)
            if "include" in config:
                path = config.pop("include")
                path = path if os.path.isfile(path) else os.path.join(os.path.dirname(yaml_path), path)
                base = load_yaml_config(yaml_path=path, mode=mode)
                base.update(config)
                return base
            return config
        """,
    "lmms_eval/tasks/__init__.py": """
        import os

        from loguru import logger as eval_logger

        from lmms_eval import utils

        REAL = []  # the folders the real method indexed in this process


        class TaskManager:
            def __init__(self, include_path=None):
                self.logger = eval_logger
                self.task_index = {}
                for task_dir in [os.path.dirname(os.path.abspath(__file__)) + "/", *([include_path] if include_path else [])]:
                    self.task_index = {**self._get_task_and_group(task_dir), **self.task_index}

            def _get_task_and_group(self, task_dir):
                REAL.append(task_dir)
                found = {}
                for root, dirs, files in os.walk(task_dir):
                    dirs[:] = [d for d in dirs if d != "__pycache__"]
                    for name in files:
                        if name.endswith(".yaml"):
                            config = utils.load_yaml_config(os.path.join(root, name), mode="simple")
                            if "task" in config:
                                found[config["task"]] = {"type": "task", "answer": config.get("answer"), "yaml_path": os.path.join(root, name)}
                            else:
                                self.logger.debug(f"File {name} in {root} could not be loaded as a task or group")
                return found
        """,
    "lmms_eval/tasks/a/a.yaml": "task: a\ninclude: ../../../shared_base\n",
    "lmms_eval/tasks/b/b.yaml": "task: b\nanswer: 2\n",
    "lmms_eval/tasks/b/_template.yaml": "answer: 0\n",
    "shared_base": "answer: 1\n",
    "ours/c.yaml": "task: c\nanswer: 3\n",
}

DRIVER = """
import json, sys
from loguru import logger
logger.remove()
logger.add(sys.stderr, level=sys.argv[1])
import lmms_eval.tasks as tasks
manager = tasks.TaskManager(include_path=sys.argv[2] if len(sys.argv) > 2 else None)
print(json.dumps({"index": manager.task_index, "real": [p.rstrip("/").rsplit("/", 1)[-1] for p in tasks.REAL]}))
"""


@pytest.fixture
def fake(tmp_path: Path) -> Path:
    root = tmp_path / "fake"
    for name, text in FAKE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def _index(fake: Path, cache: Path | None, level: str = "INFO", include: Path | None = None, extra_path: Path | None = None) -> tuple[dict, list[str], str]:
    # the hook's other parts alone (the preload has its own tests: tests/foundation/test_preload.py)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", INDEX_CACHE_ENV, DEFER_IMPORTS_ENV, PRELOAD_ENV)}
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in (fake, extra_path) if p)
    if cache is not None:
        env = hooked({**env, INDEX_CACHE_ENV: str(cache)})
    argv = [sys.executable, "-c", DRIVER, level, *([str(include)] if include else [])]
    out = subprocess.run(argv, env=env, cwd=fake, capture_output=True, text=True, timeout=300, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return result["index"], result["real"], out.stderr


def test_a_later_process_gets_the_real_index_without_indexing(fake: Path, tmp_path: Path) -> None:
    real, indexed, _ = _index(fake, None, include=fake / "ours")
    first, first_indexed, _ = _index(fake, tmp_path / "cache", include=fake / "ours")
    later, later_indexed, _ = _index(fake, tmp_path / "cache", include=fake / "ours")
    assert real == first == later and set(real) == {"a", "b", "c"} and real["a"]["answer"] == 1
    assert indexed == first_indexed == ["tasks", "ours"]
    assert later_indexed == ["ours"]  # the built-in tree from the cache; --include_path folders always for real


@pytest.mark.parametrize(
    "change",
    ["edit_in_tree", "new_file_in_tree", "include_outside_tree", "code"],
)
def test_any_change_to_what_the_real_method_reads_indexes_again(change: str, fake: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _index(fake, cache)
    if change == "edit_in_tree":
        (fake / "lmms_eval/tasks/b/b.yaml").write_text("task: b\nanswer: 22\n", encoding="utf-8")
    elif change == "new_file_in_tree":
        (fake / "lmms_eval/tasks/b/d.yaml").write_text("task: d\n", encoding="utf-8")
    elif change == "include_outside_tree":
        (fake / "shared_base").write_text("answer: 11\n", encoding="utf-8")
    else:
        path = fake / "lmms_eval/utils.py"
        path.write_text(path.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    after, indexed, _ = _index(fake, cache)
    real, _, _ = _index(fake, None)
    assert indexed == ["tasks"] and after == real
    assert {"edit_in_tree": after["b"]["answer"] == 22, "new_file_in_tree": "d" in after, "include_outside_tree": after["a"]["answer"] == 11, "code": True}[change]


def test_a_message_the_real_call_logged_is_never_swallowed(fake: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _index(fake, cache)
    _, indexed, stderr = _index(fake, cache, level="DEBUG")
    assert indexed == ["tasks"] and "File _template.yaml in" in stderr  # a handler shows DEBUG: indexed for real
    _, indexed, stderr = _index(fake, cache, level="INFO")
    assert indexed == [] and "could not be loaded" not in stderr


def test_the_next_sitecustomize_on_the_path_still_runs(fake: Path, tmp_path: Path) -> None:
    site = tmp_path / "own_site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import sys\nprint('own start-up code', file=sys.stderr)\n", encoding="utf-8")
    _, _, stderr = _index(fake, tmp_path / "cache", extra_path=site)
    assert "own start-up code" in stderr


def test_hooked_only_where_a_part_is_asked_for() -> None:
    assert hooked({"PYTHONPATH": "/a"}) == {"PYTHONPATH": "/a"}
    assert hooked({"PYTHONPATH": "/a", INDEX_CACHE_ENV: "", DEFER_IMPORTS_ENV: ""}) == {"PYTHONPATH": "/a", INDEX_CACHE_ENV: "", DEFER_IMPORTS_ENV: ""}
    env = hooked({INDEX_CACHE_ENV: "/cache", "PYTHONPATH": os.pathsep.join(["/a", str(SITE_DIR)])})
    assert env["PYTHONPATH"].split(os.pathsep) == [str(SITE_DIR), "/a"]
    assert hooked({DEFER_IMPORTS_ENV: "evaluate"})["PYTHONPATH"] == str(SITE_DIR)
    assert hooked({PRELOAD_ENV: "/servers"})["PYTHONPATH"] == str(SITE_DIR)
    assert PRELOAD_ENV not in unhooked({**env, PRELOAD_ENV: "/servers"})
    assert INDEX_CACHE_ENV not in unhooked(env) and DEFER_IMPORTS_ENV not in unhooked({**env, DEFER_IMPORTS_ENV: "evaluate"})


def test_an_unreadable_stored_index_is_indexed_again(fake: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    real, _, _ = _index(fake, cache)
    (stored,) = cache.glob("*.pickle")
    stored.write_bytes(b"not a pickle")
    again, indexed, _ = _index(fake, cache)
    assert indexed == ["tasks"] and again == real


# -- deferred imports ------------------------------------------------------------------------------------------

DEFERRABLE = {
    "slowpkg/__init__.py": "import sys\n\nprint('slowpkg ran', file=sys.stderr)\nVALUE = 42\n\n\ndef double(x):\n    return 2 * x\n",
    "slowpkg/sub.py": "from slowpkg import VALUE\n\nSUB = VALUE + 1\n",
    "brokenpkg/__init__.py": "raise RuntimeError('broken at import')\n",
}

DEFER_DRIVER = """
import inspect, json, sys, types
import slowpkg
ran = lambda: "VALUE" in vars(slowpkg)
seen = {"after_import": ran()}
seen["names"] = [slowpkg.__name__, slowpkg.__spec__.name, slowpkg.__file__.endswith("__init__.py"), len(slowpkg.__path__)]
inspect.getmodule(inspect.currentframe())  # reads __file__ of every module, as torchvision's import does
seen["after_dunders"] = ran()
seen["double"] = slowpkg.double(2)
seen["after_use"] = ran()
seen["plain_module"] = type(slowpkg) is types.ModuleType
seen["loader"] = type(slowpkg.__loader__).__name__
from slowpkg.sub import SUB
seen["sub"] = SUB
if "brokenpkg" in sys.argv[1:]:
    import brokenpkg
    try:
        brokenpkg.anything
    except RuntimeError as exc:
        seen["broken"] = [str(exc), "brokenpkg" in sys.modules]
print(json.dumps(seen))
"""


def _deferring(tmp_path: Path, names: str | None) -> tuple[dict, str]:
    root = tmp_path / "pkgs"
    for name, text in DEFERRABLE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    # the hook's other parts alone (the preload has its own tests: tests/foundation/test_preload.py)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", INDEX_CACHE_ENV, DEFER_IMPORTS_ENV, PRELOAD_ENV)}
    env["PYTHONPATH"] = str(root)
    if names is not None:
        env = hooked({**env, DEFER_IMPORTS_ENV: names})
    out = subprocess.run([sys.executable, "-c", DEFER_DRIVER, *(names or "").replace(" ", "").split(",")], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


def test_a_deferred_module_runs_once_when_first_used_and_then_is_the_module_imported(tmp_path: Path) -> None:
    seen, stderr = _deferring(tmp_path, "evaluate, slowpkg,brokenpkg")
    assert seen["after_import"] is False and seen["after_dunders"] is False  # what the import system set needs no run
    assert seen["names"] == ["slowpkg", "slowpkg", True, 1]
    assert seen["double"] == 4 and seen["after_use"] is True and seen["sub"] == 43
    assert seen["plain_module"] is True and seen["loader"] == "SourceFileLoader"  # as the real import leaves it
    assert stderr.count("slowpkg ran") == 1
    assert seen["broken"] == ["broken at import", False]  # its error when used, and no half-run module left behind


def test_without_the_variable_modules_run_at_import(tmp_path: Path) -> None:
    seen, stderr = _deferring(tmp_path, None)
    assert seen["after_import"] is True and stderr.count("slowpkg ran") == 1
    seen, _ = _deferring(tmp_path, "otherpkg")  # only the modules named
    assert seen["after_import"] is True


@pytest.mark.slow
def test_lmms_eval_and_its_model_start_without_running_evaluate_which_still_works(tmp_path: Path) -> None:
    """What the suite's lmms-eval processes import before they score (`lmms_eval.__main__`, the chat model's
    `qwen_vl_utils` with torchvision, whose import reads every module's `__file__`) leaves `evaluate` and
    `transformers.pipelines` unrun; the registry's `hf_evaluate` is then the real `evaluate`."""
    probe = (
        "import json, sys\n"
        "import lmms_eval.__main__, lmms_eval.protocol, torchvision\n"
        "from lmms_eval.api import registry\n"
        "before = ['load' in vars(sys.modules['evaluate']), 'transformers.pipelines' in sys.modules]\n"
        "print(json.dumps([before, callable(registry.hf_evaluate.load), 'transformers.pipelines' in sys.modules]))\n"
    )
    env = hooked({**{k: v for k, v in os.environ.items() if k != INDEX_CACHE_ENV}, DEFER_IMPORTS_ENV: "evaluate"})
    out = subprocess.run([sys.executable, "-c", probe], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [[False, False], True, True]
