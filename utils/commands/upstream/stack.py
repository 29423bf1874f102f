"""The contribution as lmms-eval takes it: an ordered stack of pull requests, each of one concern.

First the core changes, one PR per patch of the series that the checkout lacks (`series.plan`: the files in
`patch_series/<version>/`, so deleting a patch file drops its PR), then one PR per shared service the tasks call
(`exporter.SERVICES`: the disk cache, the judge client, the task-data checks, the code sandbox; its modules and its tests),
then one PR per benchmark: its task folder (YAMLs, hooks, `lib/`), its tests that run on the exported runtime alone, and
its line in `docs/advanced/current_tasks.md`. Benchmark PR k is the difference between the export of the first k
benchmarks and that of the first k-1; every shared module is in a service PR, so a benchmark PR adds files only under
its own folder (and tests and docs) and needs only core and service PRs.

Each PR has a cap on the non-test Python it adds under `lmms_eval/` (`CAPS`, by kind; `--list` shows each against
its cap, `tests/upstream/test_caps.py` fails past one); the whole stack is reported, not capped.

Every PR is one `git am`-able patch (`lmms_tasks_stack/NN-<name>.patch`) with its description beside it
(`NN-<name>.md`); applying them in order, one branch per patch, gives the stacked branches (docs/UPSTREAM.md).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from lmms_tasks.utils.commands.upstream import catalog, exporter, series
from lmms_tasks.utils.commands.upstream.sources import ExportError, SourceTree
from lmms_tasks.utils.commands.upstream.style import Style, format_sources

STACK_DIR = "lmms_tasks_stack"
LIST_START, LIST_END = "<!-- stack:start -->", "<!-- stack:end -->"  # around `--list`'s output, and the copy in docs/UPSTREAM.md
AUTHOR = ("lmms-tasks export-upstream", "lmms-tasks@users.noreply.github.com")
DATE = "Thu, 1 Jan 2026 00:00:00 +0000"  # fixed: a second export writes the same bytes

# What each core PR changes for the tasks lmms-eval already has (the PR text states it; a patch of the series
# without an entry stops the export, so a new patch cannot go out without saying).
EXISTING_TASKS: dict[str, str] = {
    "0001-task-strip-responses": (
        "Nothing: `strip_responses` defaults to None, which strips as today; a None field is left out of a saved config, so "
        "existing tasks' saved configs and `--use_cache` fingerprints keep their keys."
    ),
    "0002-group-exact-metrics": "Nothing: `match`, `group_metric` and subtask-aware aggregations are opt-in per `aggregate_metric_list` entry; the default substring matching is kept.",
    "0003-cli-exit-status": (
        "This is the PR's purpose, for every task: every entry point that runs an evaluation (`lmms-eval --model ...`, "
        "`lmms-eval eval --model ...`, the wizard `lmms-eval eval` with no arguments, `python -m lmms_eval`, each rank of "
        "`accelerate launch -m lmms_eval`) now exits 4 when the evaluation raised (it exited 0 after logging the error), 3 when "
        "a task reported incomplete scoring, the error's own `exit_status` where it carries one (a data error: 1), 0 otherwise "
        "(the wizard also 0 when its command is not run). The other subcommands (`tasks`, `models`, `ui`, `serve`, ...) keep their codes."
    ),
    "0004-task-custom-dataset": "Nothing: tasks without `custom_dataset` load exactly as before, retry included.",
    "0004-task-load-retry-network-errors": (
        "This is the PR's purpose, for every task: dataset loading is retried only for network errors (connection, timeout, "
        "HTTP 429/5xx from the Hub); any other loading error, and any error in `process_docs`, is raised once and unchanged "
        "instead of five times 2 s apart and then as a `RetryError`."
    ),
    "0006-task-batch-scoring": (
        "Nothing for results: `process_results_batch` is opt-in. Multi-process runs gather each logged sample with its filter key "
        "(a (filter, sample) pair instead of the sample); rank 0 unpacks it before writing, so the samples files are unchanged "
        "(`test/eval/test_batch_scoring_multiprocess.py` runs 2 processes with `accelerate launch --cpu`, gloo)."
    ),
    "0007-evaluator-k-samples-stability": (
        "`score_each_repeat` defaults to None (off, and left out of a saved config, so existing tasks' saved configs and "
        "`--use_cache` fingerprints keep their keys). Only under `--repeats K` (K > 1) for tasks that set `score_each_repeat: true`: each of the K responses is also "
        "scored with `process_results`, K more calls per document (a task that judges in `process_results` makes K more judge "
        "calls); headline metrics are unchanged and the stability metrics appear. Every other task makes exactly the "
        "`process_results` calls it makes today, `--repeats` or not."
    ),
    "0008-baselines-per-task-samples": "Only under a local `--baseline` with several tasks: each task is compared with its own samples file instead of the first task's.",
    "0009-openai-sampling-parameters": (
        "Tasks run with the chat `openai` model send the `top_p`, `seed`, `presence_penalty`, `frequency_penalty` and `n` their "
        "`generation_kwargs` set (as 0.7.3 did), where valid for the API (`0 < top_p <= 1`; other values are not sent). "
        "On main at the series' commit that changes the sampling of 15 tasks in 6 folders, whose resolved configuration (their "
        "includes followed) sets a top_p below 1 (no task sets a seed, a non-zero penalty or n > 1): kaleidoscope (5), lsdbench, mme_cot (2), multi_crit (2), "
        "olympiadbench (2), omni_bench (3); 496 tasks in 153 folders set `top_p: 1.0`, "
        "the API's default, now sent with no change to sampling."
    ),
}
# The pull request template's "Type of Change" of each core PR, as what it does to existing users: a change of
# behaviour every run sees is a breaking change (scripts that read the exit status, loading that no longer retries
# a non-network error), whatever its title says; an opt-in feature is a feature even where it fixes a bug for the
# tasks that opt in (0007: tasks that do not set `score_each_repeat` keep today's scoring under `--repeats`).
CHANGE_TYPES: dict[str, tuple[str, ...]] = {
    "0001-task-strip-responses": ("New feature",),
    "0002-group-exact-metrics": ("New feature",),
    "0003-cli-exit-status": ("New feature", "Breaking change"),
    "0004-task-custom-dataset": ("New feature",),
    "0004-task-load-retry-network-errors": ("Breaking change",),
    "0006-task-batch-scoring": ("New feature",),
    "0007-evaluator-k-samples-stability": ("New feature",),
    "0008-baselines-per-task-samples": ("Bug fix (non-breaking change)",),
    "0009-openai-sampling-parameters": ("Bug fix (non-breaking change)", "Breaking change"),
}
VALIDATION_FILE = Path(__file__).with_name("validation.json")  # measured: `tests/upstream/test_stack.py` fails when it is stale
MAIN_COMMIT = "75571cfe"


# The most non-test Python (`wc -l` of the added lines) one PR may add under lmms_eval/, by kind: a core change, a
# benchmark (and within it its own task folder, `lib/` included), the judging service (all of it inside
# lmms_eval/llm_judge/), the code-execution service, any other shared service. The whole stack is reported, not capped.
# code_execution 700 (was 500) and the folder 1,700 (was 1,600): the process isolation level for containers that refuse
# user namespaces (its session and cgroup clean-up, the load-time check and its classified refusals) and HumanEval-V's
# recording of the level.
CAPS = {"core": 100, "benchmark": 2500, "judging": 1000, "code_execution": 700, "service": 1000}
BENCHMARK_FOLDER_CAP = 1700
JUDGING_HOME = "lmms_eval/llm_judge/"
README_LIMIT = 150  # lines of a task folder's README (lmms-eval 0.7.3's task READMEs: median ~55, largest 225)


@dataclass
class PullRequest:
    """One PR of the stack: its patch (git am-able), description and what the listing shows."""

    name: str  # "0003-cli-exit-status" or the benchmark folder name
    kind: str  # "core" | "service" | "benchmark"
    title: str
    needs: list[str]
    patch: bytes
    body: str  # the description (Markdown)
    files: list[str] = field(default_factory=list)  # checkout-relative paths it adds or changes
    lines: dict[str, int] = field(default_factory=dict)  # added lines: core / task / tests
    python_lines: dict[str, int] = field(default_factory=dict)  # added Python lines, same keys
    cap_kind: str = ""  # the key of CAPS: core, benchmark, judging, code_execution or service

    def stem(self, position: int) -> str:
        return f"{position:02d}-{self.name.replace('_', '-')}"

    @property
    def label(self) -> str:
        """The kind as `--list` shows it: core, benchmark, or the service's kind."""
        return self.kind if self.kind != "service" or self.cap_kind == "service" else f"service: {self.cap_kind.replace('_', ' ')}"

    @property
    def capped_lines(self) -> int:
        """The non-test Python lines it adds under lmms_eval/ (what its cap counts)."""
        return python_added_under(self.patch, "lmms_eval/")

    def over_cap(self) -> list[str]:
        """What of its cap it exceeds (empty when within)."""
        cap = CAPS[self.cap_kind or self.kind]
        problems = [f"{self.capped_lines} > {cap} non-test Python lines under lmms_eval/"] if self.capped_lines > cap else []
        if self.cap_kind == "benchmark":
            folder = python_added_under(self.patch, f"lmms_eval/tasks/{self.name}/")
            if folder > BENCHMARK_FOLDER_CAP:
                problems.append(f"{folder} > {BENCHMARK_FOLDER_CAP} in lmms_eval/tasks/{self.name}/")
        if self.cap_kind == "judging" and python_added_under(self.patch, JUDGING_HOME) != self.capped_lines:
            problems.append(f"{self.capped_lines - python_added_under(self.patch, JUDGING_HOME)} lines outside {JUDGING_HOME}")
        return problems

    def cap_report(self) -> str:
        """`cap: <lines>/<cap>` (and the benchmark folder's, or the judging lines inside llm_judge/), `OVER: ...` past it."""
        text = f"cap {self.capped_lines}/{CAPS[self.cap_kind or self.kind]}"
        if self.cap_kind == "benchmark":
            text += f", folder {python_added_under(self.patch, f'lmms_eval/tasks/{self.name}/')}/{BENCHMARK_FOLDER_CAP}"
        if self.cap_kind == "judging":
            text += f", {python_added_under(self.patch, JUDGING_HOME)} in {JUDGING_HOME}"
        problems = self.over_cap()
        return text + (f" (OVER: {'; '.join(problems)})" if problems else "")


@dataclass
class Stack:
    prs: list[PullRequest]
    version: str | None  # the series version of the core PRs (None: the checkout needs none)
    export: exporter.Export  # the export of every benchmark (what the benchmark PRs add up to)

    def files(self) -> dict[str, bytes]:
        """The files `export-upstream` writes into the checkout: `lmms_tasks_stack/` (patches, descriptions, README)."""
        out = {f"{STACK_DIR}/README.md": readme(self).encode("utf-8")}
        for position, pr in enumerate(self.prs, start=1):
            out[f"{STACK_DIR}/{pr.stem(position)}.patch"] = pr.patch
            out[f"{STACK_DIR}/{pr.stem(position)}.md"] = description(pr).encode("utf-8")
        return out


def _category(path: str) -> str:
    if path.startswith("test/"):
        return "tests"
    if path.startswith("lmms_eval/tasks/") or path.startswith("docs/"):
        return "task"
    return "core"


def count_added(patch: bytes) -> tuple[list[str], dict[str, int], dict[str, int]]:
    """The files a patch touches and its added lines per category (all files, and Python files only)."""
    files: list[str] = []
    lines = {"core": 0, "task": 0, "tests": 0}
    python = dict(lines)
    current = None
    for raw in patch.decode("utf-8", errors="replace").splitlines():
        if raw.startswith("diff --git a/"):
            current = raw.split(" b/", 1)[1]
            files.append(current)
        elif current and raw.startswith("+") and not raw.startswith("+++"):
            lines[_category(current)] += 1
            if current.endswith(".py"):
                python[_category(current)] += 1
    return files, lines, python


def python_added_under(patch: bytes, prefix: str) -> int:
    """The lines a patch adds to non-test Python files below `prefix`."""
    added, current = 0, None
    for raw in patch.decode("utf-8", errors="replace").splitlines():
        if raw.startswith("diff --git a/"):
            current = raw.split(" b/", 1)[1]
        elif current and current.startswith(prefix) and current.endswith(".py") and raw.startswith("+") and not raw.startswith("+++"):
            added += 1
    return added


def _subject(patch: bytes) -> str:
    text = patch.decode("utf-8", errors="replace")
    match = re.search(r"^Subject: (?:\[PATCH[^\]]*\] )?(.+(?:\n .+)*)", text, re.MULTILINE)
    return re.sub(r"\n ", " ", match.group(1)).strip() if match else "?"


def _message(patch: bytes) -> str:
    text = patch.decode("utf-8", errors="replace")
    head, _, _ = text.partition("\n---\n")
    body = re.split(r"^Subject: .+(?:\n .+)*\n", head, maxsplit=1, flags=re.MULTILINE)
    return body[1].strip() if len(body) > 1 else ""


def _added_tests(files: list[str]) -> list[str]:
    return [f for f in files if f.startswith("test/") and Path(f).name.startswith("test_") and f.endswith(".py")]


def validation() -> dict[str, dict[str, dict]]:
    """The measured validation of each PR: series version -> PR name -> {"command", "n", "result"}."""
    import json

    return json.loads(VALIDATION_FILE.read_text(encoding="utf-8")) if VALIDATION_FILE.is_file() else {}


def _validation_rows(name: str) -> list[str]:
    rows = []
    for version, prs in sorted(validation().items()):
        if name in prs:
            row = prs[name]
            base = "lmms-eval 0.7.3" if version == "0.7.3" else f"lmms-eval main {MAIN_COMMIT}"
            rows.append(f"| {base} with this PR and those it needs: `{row['command']}` | {row['n']} | {row['result']} |")
    return rows or ["| (not measured yet) | 0 | - |"]


TYPES = ("Bug fix (non-breaking change)", "New feature", "New benchmark/task", "Breaking change")


def template(summary: list[str], in_scope: list[str], out_of_scope: list[str], name: str, risk: list[str], types: tuple[str, ...]) -> str:
    """A description in lmms-eval's pull request template (.github/pull_request_template.md)."""

    def bullets(items: list[str]) -> str:
        return "\n".join(f"- {item}" for item in items)

    return "\n\n".join(
        [
            "## Summary\n" + bullets(summary[:3]),
            "## In scope\n" + bullets(in_scope),
            "## Out of scope\n" + bullets(out_of_scope),
            "## Validation\n| command | N | result |\n|---|---|---|\n" + "\n".join(_validation_rows(name)),
            "## Risk / Compatibility\n" + bullets(risk[:2]),
            "## Type of Change\n" + "\n".join(f"- [{'x' if kind in types else ' '}] {kind}" for kind in TYPES),
        ]
    )


def _paragraphs(message: str) -> list[str]:
    return [" ".join(p.split()) for p in message.split("\n\n") if p.strip()]


def core_prs(plan: series.SeriesPlan) -> list[PullRequest]:
    prs = []
    for rel, patch in plan.files.items():
        name = Path(rel).stem
        if name not in EXISTING_TASKS or name not in CHANGE_TYPES:
            raise ExportError(
                f"{series.SERIES_DIR}/{plan.version}/{name}.patch: say what it changes for existing tasks and its type of change "
                "in stack.EXISTING_TASKS and stack.CHANGE_TYPES"
            )
        files, lines, python = count_added(patch)
        subject = _subject(patch)
        paragraphs = _paragraphs(_message(patch))
        body = template(
            paragraphs[:2],
            [f"`{f}`" for f in files] + paragraphs[2:],
            ["Task folders, models and every other module of lmms-eval: only the files above change."],
            name,
            [EXISTING_TASKS[name]],
            CHANGE_TYPES[name],
        )
        prs.append(PullRequest(name, "core", subject, [], patch, body, files, lines, python, cap_kind="core"))
    return prs


def _uses(files: dict[str, bytes], features: dict[str, str]) -> list[str]:
    """The core features (by name) whose marker appears in `files`."""
    found = []
    for name, pattern in features.items():
        regex = re.compile(pattern, re.MULTILINE)
        if any(regex.search(data.decode("utf-8", errors="replace")) for rel, data in files.items() if rel.endswith((".py", ".yaml", "_yaml"))):
            found.append(name)
    return found


def _git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": AUTHOR[0],
        "GIT_AUTHOR_EMAIL": AUTHOR[1],
        "GIT_COMMITTER_NAME": AUTHOR[0],
        "GIT_COMMITTER_EMAIL": AUTHOR[1],
        "GIT_AUTHOR_DATE": DATE,
        "GIT_COMMITTER_DATE": DATE,
    }
    out = subprocess.run(["git", "-c", "core.autocrlf=false", "-c", "commit.gpgsign=false", *args], cwd=cwd, env=env, capture_output=True, check=False)
    if out.returncode != 0:
        raise ExportError(f"git {' '.join(args[:2])}: {out.stderr.decode(errors='replace').strip()}")
    return out.stdout.decode("utf-8", errors="replace")


def _commit(repo: Path, files: dict[str, bytes], previous: dict[str, bytes], title: str) -> tuple[dict[str, bytes], bytes]:
    """Make the scratch repository hold `files` (removing what `previous` had beyond them), commit it as `title`;
    the files that changed and the commit as a `git am`-able patch."""
    for rel in set(previous) - set(files):
        (repo / rel).unlink()
    changed = {rel: data for rel, data in files.items() if previous.get(rel) != data}
    for rel, data in changed.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_bytes(data)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", title)
    return changed, _git(repo, "format-patch", "-1", "--zero-commit", "--binary", "--no-signature", "--stdout").encode("utf-8")


def service_prs(
    repo: Path, tree: SourceTree, full: exporter.Export, core: list[PullRequest], owner: dict[str, str]
) -> tuple[list[PullRequest], dict[str, bytes]]:
    """One PR per shared service the exported tasks call (`exporter.SERVICES`), before the benchmarks: its modules
    with what they import that no earlier service PR added, and its exportable tests. Texts are those of the full
    export, so the benchmark PRs leave them alone."""
    files = full.plan.files
    init = exporter.shared_init_path(tree)
    state: dict[str, bytes] = {}
    prs = []
    for service in full.services:
        paths = (exporter.service_files(tree, service) | {init}) - set(state)
        paths |= {rel for rel in files if rel.startswith(f"{exporter.TEST_ROOT}/{service.tests}/")}
        added = {rel: files[rel] for rel in sorted(paths)}
        needs = [pr.name for pr in core if pr.name in _uses(added, series.USES)]
        needs += sorted({owner[rel] for rel in _named_by(added, state) if rel in owner})
        changed, patch = _commit(repo, {**state, **added}, state, service.title)
        state = {**state, **added}
        for rel in changed:
            owner.setdefault(rel, service.name)
        touched, lines, python = count_added(patch)
        body = template(
            [service.what],
            [f"`{f}`" for f in touched],
            ["Existing tasks: no task folder imports these modules.", "Benchmarks: each comes in its own PR after the services.", *service.out_of_scope],
            service.name,
            [service.risk],
            ("New feature",),
        )
        prs.append(PullRequest(service.name, "service", service.title, needs, patch, body, touched, lines, python, cap_kind=service.kind))
    return prs, state


def benchmark_prs(root: Path, tree: SourceTree, style: Style | None, include_tests: bool, core: list[PullRequest]) -> tuple[list[PullRequest], exporter.Export]:
    """The service PRs, then one PR per benchmark: the difference between the export of the first k benchmarks and of
    the first k-1 (the service PRs' files kept as they added them)."""
    catalog_path = root / catalog.CATALOG_PATH
    base_catalog = catalog_path.read_text(encoding="utf-8") if catalog_path.is_file() else None
    prs: list[PullRequest] = []
    formatted: dict[tuple[str, bytes], bytes] = {}
    full = exporter.build(tree, None, include_tests=include_tests)
    full.plan.files = _formatted(full.plan.files, style, formatted)
    with tempfile.TemporaryDirectory(prefix="lmms_tasks_stack_") as scratch:
        repo = Path(scratch)
        _git(repo, "init", "-q")
        if base_catalog is not None:
            (repo / catalog.CATALOG_PATH).parent.mkdir(parents=True)
            (repo / catalog.CATALOG_PATH).write_text(base_catalog, encoding="utf-8")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "--allow-empty", "-m", "base")
        owner: dict[str, str] = {}  # file -> the service or benchmark PR that added it
        prs, previous = service_prs(repo, tree, full, core, owner)
        init = exporter.shared_init_path(tree)
        kept = {rel: data for rel, data in previous.items() if rel != init}
        for k, benchmark in enumerate(tree.benchmarks, start=1):
            result = exporter.build(replace(tree, benchmarks=tree.benchmarks[:k]), None, include_tests=include_tests)
            files = {**_formatted(result.plan.files, style, formatted), **kept}
            files[catalog.CATALOG_PATH] = catalog.patch(base_catalog, result.plan.catalog_lines, result.plan.catalog_sections, []).encode("utf-8")
            names = result.task_names[benchmark]
            entry = catalog.describe(benchmark, tree.benchmark_dir(benchmark) / "README.md", names)
            title = f"feat(tasks): add {entry.name} ({', '.join(names)})"
            changed, patch = _commit(repo, files, previous, title)
            runtime = {r: d for r, d in files.items() if r.startswith((f"lmms_eval/tasks/{benchmark}/", "lmms_eval/tasks/_task_utils/"))}
            needs = [pr.name for pr in core if pr.name in _uses(runtime, series.USES)]
            own = {r: d for r, d in files.items() if r.startswith(f"lmms_eval/tasks/{benchmark}/")}
            needs += sorted(
                {owner[rel] for rel in _named_by(own, files) | set(changed) if rel in owner and rel != catalog.CATALOG_PATH}
            )  # the catalog: each adds its own line
            touched, lines, python = count_added(patch)
            for rel in changed:
                owner.setdefault(rel, benchmark)
            body = _benchmark_body(benchmark, entry.name, names, touched, needs)
            prs.append(PullRequest(benchmark, "benchmark", title, needs, patch, body, touched, lines, python, cap_kind="benchmark"))
            previous = files
    return prs, full


def _formatted(files: dict[str, bytes], style: Style | None, cache: dict[tuple[str, bytes], bytes]) -> dict[str, bytes]:
    """`files` with their Python formatted by the checkout's `style`, each distinct text formatted once (the k-th
    cumulative export repeats most of the (k-1)-th)."""
    if style is None:
        return dict(files)
    todo = {rel: data.decode("utf-8") for rel, data in files.items() if rel.endswith(".py") and (rel, data) not in cache}
    if todo:
        for rel, text in format_sources(todo, style).items():
            cache[(rel, files[rel])] = text.encode("utf-8")
    return {rel: cache.get((rel, data), data) if rel.endswith(".py") else data for rel, data in files.items()}


def _named_by(sources: dict[str, bytes], files: dict[str, bytes]) -> set[str]:
    """The shared files among `files` that the Python of `sources` names (by module path), one level: enough to say
    which earlier PR it needs."""
    text = "\n".join(d.decode("utf-8", errors="replace") for r, d in sources.items() if r.endswith(".py"))
    needed = set()
    for rel in files:
        if rel.startswith(("lmms_eval/tasks/_task_utils/", JUDGING_HOME)) and rel.endswith(".py"):
            module = rel[: -len(".py")].removesuffix("/__init__").replace("/", ".")
            parent, _, name = module.rpartition(".")
            if re.search(rf"\b{re.escape(module)}\b|\bfrom {re.escape(parent)} import [^\n]*\b{name}\b", text):
                needed.add(rel)
    return needed


# What a user of one benchmark must know before running it (the Risk bullet of its PR).
BENCHMARK_RISK = {
    "humaneval_v": (
        "Scoring executes model-written code (in the code-execution PR's sandbox, which needs bubblewrap) and lints it with "
        "pylint, neither of which lmms-eval installs: the tasks refuse when they load, before any inference, unless "
        "`HUMANEVAL_V_ALLOW_CODE_EXECUTION=1` is set, `pylint==3.3.4` is installed and bubblewrap can build a sandbox."
    ),
}


def _benchmark_body(benchmark: str, display: str, names: list[str], files: list[str], needs: list[str]) -> str:
    return template(
        [
            f"Adds {display} as built-in tasks ({', '.join(f'`{n}`' for n in names)}); every metric reproduces {display}'s official "
            "scorer on the same outputs, and the task README lists where it differs.",
        ],
        [
            f"`lmms_eval/tasks/{benchmark}/` (YAMLs, hooks, `lib/`, README)",
            f"`test/eval/{benchmark}/`",
            "one line in `docs/advanced/current_tasks.md`",
        ],
        [
            "lmms-eval's core and every other task folder: nothing outside the folders above changes.",
            "The core changes and shared services it needs come in their own PRs: " + (", ".join(f"`{n}`" for n in needs) or "none") + ".",
        ],
        benchmark,
        ["None for existing tasks: a new task folder only.", *([BENCHMARK_RISK[benchmark]] if benchmark in BENCHMARK_RISK else [])],
        ("New benchmark/task",),
    )


def build(root: Path, tree: SourceTree, style: Style | None, include_tests: bool = True, patches: bool = True) -> Stack:
    plan = series.plan(root) if patches else series.SeriesPlan(missing=[])
    core = core_prs(plan)
    for i, pr in enumerate(core):  # a core PR needs the ones before it that touch the same files
        pr.needs = [earlier.name for earlier in core[:i] if set(earlier.files) & set(pr.files)]
    benchmarks, full = benchmark_prs(root, tree, style, include_tests, core)
    return Stack(core + benchmarks, plan.version, full)


def sizes(stack: Stack) -> dict[str, int]:
    """Reported, not capped: the non-test Python lines each PR adds under lmms_eval/ (`PullRequest.capped_lines`), and
    `total`, the whole stack's."""
    out = {pr.name: pr.capped_lines for pr in stack.prs}
    out["total"] = sum(out.values())
    return out


def description(pr: PullRequest) -> str:
    needs = ", ".join(pr.needs) or "nothing"
    return f"# {pr.title}\n\nNeeds: {needs}\n\n{pr.body}\n"


def _counts(pr: PullRequest) -> str:
    c, p = pr.lines, pr.python_lines
    return f"+{c['core']}/{c['task']}/{c['tests']} lines (Python +{p['core']}/{p['task']}/{p['tests']})"


def listing(stack: Stack) -> str:
    """`--list`: the stack in order, each PR with its needs, line counts (core / task / tests) and files."""
    out = []
    for position, pr in enumerate(stack.prs, start=1):
        out.append(f"{position:02d}. `{pr.stem(position)}` ({pr.label}) {pr.title}")
        out.append(
            f"    needs: {', '.join(pr.needs) or 'nothing'}; {len(pr.files)} file(s), {_counts(pr)} (core/task/tests); {pr.cap_report()}"
        )
        for rel in pr.files:
            out.append(f"    - `{rel}`")
    return "\n".join(out)


_HEAD = re.compile(r"^(?P<n>\d+)\. `(?P<stem>[^`]+)` \((?P<kind>core|service|benchmark)(?:: (?P<area>[a-z ]+))?\) (?P<title>.+)$")
_NEEDS = re.compile(
    r"^    needs: (?P<needs>.+?); (?P<count>\d+) file\(s\), \+(?P<c>\d+)/(?P<t>\d+)/(?P<x>\d+) lines.*; cap (?P<capped>\d+)/(?P<cap>\d+)"
)
_FILE = re.compile(r"^    - `(?P<path>[^`]+)`$")


def parse_listing(text: str) -> list[dict]:
    """The PRs of a `listing` (between LIST_START and LIST_END when they are there): stem, kind, title, needs, files, lines."""
    if LIST_START in text:
        text = text.split(LIST_START, 1)[1].split(LIST_END, 1)[0]
    prs: list[dict] = []
    for line in filter(str.strip, text.splitlines()):
        if head := _HEAD.match(line):
            prs.append(
                {
                    "stem": head["stem"],
                    "kind": head["kind"],
                    "area": head["area"],
                    "title": head["title"],
                    "needs": [],
                    "files": [],
                    "lines": {},
                }
            )
        elif (needs := _NEEDS.match(line)) and prs:
            prs[-1]["needs"] = [] if needs["needs"] == "nothing" else needs["needs"].split(", ")
            prs[-1]["lines"] = {"core": int(needs["c"]), "task": int(needs["t"]), "tests": int(needs["x"])}
            prs[-1]["cap"] = (int(needs["capped"]), int(needs["cap"]))
            prs[-1]["count"] = int(needs["count"])
        elif (path := _FILE.match(line)) and prs:
            prs[-1]["files"].append(path["path"])
        else:
            raise ValueError(f"not a line of the stack listing: {line!r}")
    for pr in prs:
        if pr.get("count") != len(pr["files"]):
            raise ValueError(f"{pr['stem']}: {pr.get('count')} file(s) announced, {len(pr['files'])} listed")
    return prs


def readme(stack: Stack) -> str:
    lines = [
        "# lmms-tasks contribution stack",
        "",
        "Apply in order, one branch per pull request (each branch starts from the previous one):",
        "",
        "```bash",
        "for p in lmms_tasks_stack/*.patch; do git checkout -q -b \"lmms-tasks/$(basename \"$p\" .patch)\" && git am -q \"$p\" || break; done",
        "```",
        "",
        "Open each PR against the branch before it, with the `.md` beside its patch as the description.",
        "",
        listing(stack),
        "",
    ]
    return "\n".join(lines)
