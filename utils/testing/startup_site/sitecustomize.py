"""Start-up hook of the test suite's lmms-eval processes (lmms_tasks.utils.testing.startup_hook puts this directory
first on their PYTHONPATH). Standard library only: it must not import lmms_tasks (some tests make it unimportable)
nor lmms_eval. Two parts, each on where its variable is set and not empty:

LMMS_TASKS_TEST_INDEX_CACHE (a folder): lmms-eval's index of its own built-in tasks (`TaskManager._get_task_and_group`
over `lmms_eval/tasks/`, ~1,900 YAML files parsed by pure-Python PyYAML, about 5 s of CPU in every process) is
computed once per test run and read back by the later processes. A stored index is used only where it is what the
real method would return: the same `lmms_eval` (the path and stat of the code that builds it), the same files under
the tree (every file's relative path, size and mtime: os.walk as the method walks it), the same stat of every YAML
the real call loaded (includes outside the tree too), and no handler that would show a message the real call logged
(a hit logs nothing). Any other directory (`--include_path`, our tasks) is always indexed by the real method, which
is then the only code on its stack.

LMMS_TASKS_TEST_DEFER_IMPORTS (comma-separated top-level module names; the suite names `evaluate`): such a module's
code runs when one of its attributes is first read, not when it is imported. lmms-eval's `api/registry.py` imports
Hugging Face `evaluate` at start-up (which imports `transformers.pipelines`: over a second of CPU in every process)
and only calls it for a metric no task of ours names. The import system has already put `__name__`, `__file__`,
`__path__`, `__spec__` and `__loader__` in the module, and those are answered without running it (the standard
library's `importlib.util.LazyLoader` runs the module on any attribute, and `inspect.getmodule`, which torchvision's
import calls, reads `__file__` of every module); anything else runs the module's code first, once, exactly as the
import would have. Nothing else changes: the import finds the same file, and a module no one reads is never run.

LMMS_TASKS_TEST_PRELOAD (a folder): before both, the process asks the run's preload server of its kind to run its
command line in a fork of the heavy imports, and stands in for that fork (lmms_tasks_test_preload.py, beside this
module); where there is none or it refuses, the process goes on as usual.

This directory is not a package. Python imports one `sitecustomize`: the next one on sys.path (a test's own
start-up code) is imported after this one.
"""

import os
import sys

ENV = "LMMS_TASKS_TEST_INDEX_CACHE"
DEFER_ENV = "LMMS_TASKS_TEST_DEFER_IMPORTS"
_HERE = os.path.dirname(os.path.abspath(__file__))
_IGNORED_DIRS = ("__pycache__", ".ipynb_checkpoints")  # what lmms-eval's walk leaves out


def _stat(path):
    st = os.stat(path)
    return (st.st_size, st.st_mtime_ns)


def _tree(task_dir):
    """Every file under the tree as lmms-eval's walk sees it: (relative path, size, mtime)."""
    found = []
    for root, dirs, files in os.walk(task_dir):
        dirs[:] = sorted(d for d in dirs if d not in _IGNORED_DIRS)
        for name in sorted(files):
            path = os.path.join(root, name)
            found.append((os.path.relpath(path, task_dir),) + _stat(path))
    return found


def _oplog(detail, seconds):
    path = os.environ.get("LMMS_TASKS_TEST_OPS_LOG")
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"index-cache\t{detail}\t{os.getpid()}\t{seconds:.1f}\n".encode())
        finally:
            os.close(fd)


def _patch(tasks_module, cache_dir):
    import hashlib
    import pickle
    import time

    import lmms_eval.utils as lmms_utils

    manager = tasks_module.TaskManager
    real = manager._get_task_and_group
    builtin = os.path.dirname(os.path.abspath(tasks_module.__file__)) + "/"  # as initialize_tasks names it
    package = os.path.dirname(builtin.rstrip("/"))
    code = [os.path.join(package, part) for part in ("tasks/__init__.py", "utils.py", "api/group.py")]

    def key():
        digest = hashlib.sha256(repr((builtin, [(p,) + _stat(p) for p in code], _tree(builtin))).encode())
        return os.path.join(cache_dir, digest.hexdigest() + ".pickle")

    def quiet(level):
        core = getattr(tasks_module.eval_logger, "_core", None)
        return core is not None and level < core.min_level  # no handler shows a message of that level

    def indexed(self, task_dir):
        if task_dir != builtin:
            return real(self, task_dir)
        started = time.monotonic()
        path = key()
        try:
            with open(path, "rb") as fh:
                stored = pickle.load(fh)
        except Exception:  # none stored yet, or unreadable: index for real
            stored = None
        if stored is not None and quiet(stored["max_level"]) and all(_stat(p) == s for p, s in stored["loaded"].items()):
            lmms_utils.yaml.add_constructor("!function", lmms_utils.ignore_constructor)  # the real call's last side effect
            _oplog("hit", time.monotonic() - started)
            return stored["index"]
        loaded, levels = {}, [0]
        load = lmms_utils.load_yaml_config

        def recording(yaml_path=None, *args, **kwargs):
            if yaml_path is not None:
                loaded[os.path.abspath(yaml_path)] = _stat(yaml_path)
            return load(yaml_path, *args, **kwargs)

        sink = tasks_module.eval_logger.add(lambda message: levels.append(message.record["level"].no), level=0)
        lmms_utils.load_yaml_config = recording
        try:
            index = real(self, task_dir)
        finally:
            lmms_utils.load_yaml_config = load
            tasks_module.eval_logger.remove(sink)
        partial = f"{path}.{os.getpid()}.partial"
        try:  # written whole, then renamed: a reader sees the old file, none, or this one
            with open(partial, "wb") as fh:
                pickle.dump({"index": index, "loaded": loaded, "max_level": max(levels)}, fh)
            os.replace(partial, path)
        except OSError:  # storing only saves time for the next process
            pass
        _oplog("miss", time.monotonic() - started)
        return index

    manager._get_task_and_group = indexed


def _on_import(names, adapt):
    """Find each module of `names` as Python would, then let `adapt(spec)` change how it is loaded."""
    import importlib.abc
    import importlib.machinery

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name not in names:
                return None
            spec = importlib.machinery.PathFinder.find_spec(name, path, target)
            if spec is not None and hasattr(spec.loader, "exec_module"):
                adapt(spec)
            return spec

    sys.meta_path.insert(0, Finder())


def _install(cache_dir):
    def adapt(spec):
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _patch(module, cache_dir)

        spec.loader.exec_module = exec_module

    _on_import({"lmms_eval.tasks"}, adapt)


def _defer(names):
    """Run each module of `names` when one of its attributes other than those the import system set is first read."""
    import importlib.abc
    import threading
    import types

    lock = threading.RLock()

    class Deferred(types.ModuleType):
        def __getattr__(self, attribute):  # only for what the module's dict does not hold yet
            run(self)
            return getattr(self, attribute)

        def __dir__(self):
            run(self)
            return dir(self)

    def run(module):
        with lock:
            if type(module) is Deferred:
                module.__class__ = types.ModuleType
                try:
                    module.__loader__.exec_module(module)  # the real loader (Loader.exec_module put it there)
                except BaseException:  # as a failed import: the module is not left half run
                    sys.modules.pop(module.__name__, None)
                    raise

    class Loader(importlib.abc.Loader):
        def __init__(self, real):
            self.real = real

        def create_module(self, spec):
            return self.real.create_module(spec)

        def exec_module(self, module):
            module.__spec__.loader = module.__loader__ = self.real  # as the real import leaves them
            module.__class__ = Deferred

    def adapt(spec):
        spec.loader = Loader(spec.loader)

    _on_import(names, adapt)


def _chain():
    """Import the next `sitecustomize` on sys.path, as Python would have without this directory."""
    import importlib

    saved = sys.path[:]
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    mine = sys.modules.pop("sitecustomize", None)
    try:
        importlib.import_module("sitecustomize")
    except ImportError as exc:
        if exc.name != "sitecustomize":
            raise
        if mine is not None:
            sys.modules["sitecustomize"] = mine
    finally:
        sys.path[:] = saved


if os.environ.get("LMMS_TASKS_TEST_PRELOAD"):
    import lmms_tasks_test_preload

    lmms_tasks_test_preload.hand_over(os.environ["LMMS_TASKS_TEST_PRELOAD"])
if os.environ.get(DEFER_ENV):
    _defer({name.strip() for name in os.environ[DEFER_ENV].split(",") if name.strip()})
if os.environ.get(ENV):
    os.makedirs(os.environ[ENV], exist_ok=True)
    _install(os.environ[ENV])
_chain()
