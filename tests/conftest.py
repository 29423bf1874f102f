"""Shared pytest fixtures: a stand-in OpenAI-compatible server per test and a hermetic environment
(offline Hugging Face caches and judge/exec caches under the test's tmp dir, no real credentials)."""

from __future__ import annotations

import collections
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

# lmms-eval's `models` and `llm_judge.launcher` replace loguru's handlers when first imported, with one bound to
# the sys.stdout of that moment. Imported in-process during a test that captures (capsys: a task YAML loaded
# with its `!function`s, as `score --from-official` does for HumanEval-V v1), that stream closes with the test
# and every later warning ends in loguru's "Logging error ... I/O operation on closed file". Imported here, they
# bind to the stream of the whole session.
import lmms_eval.llm_judge.launcher  # noqa: F401
import lmms_eval.models  # noqa: F401
import pytest

from lmms_tasks.utils.services.schema import MEDIA_CACHE_ENV
from lmms_tasks.utils.testing.built_once import built_once
from lmms_tasks.utils.testing.openai_server import StandInServer

LOGURU_ERROR = "Logging error in Loguru Handler"
_OWN_BASETEMP = "_lmms_tasks_own_basetemp"
_OWN_MEDIA_CACHE = "_lmms_tasks_own_media_cache"


def pytest_configure(config: pytest.Config) -> None:
    """A temporary root of this run's own (unless --basetemp is given): pytest's default root is shared by every
    run of the user, and each run deletes all but the newest three run folders there, so concurrent runs could
    delete each other's files. pytest-xdist workers get folders below it (`<basetemp>/popen-gwN`).

    The image-verdict cache (`LMMS_TASKS_MEDIA_CACHE_DIR`, default ~/.cache/lmms_tasks/media) is the run's own too,
    set before the workers start so they, and every lmms-eval they run, inherit it: tests write nothing under the
    user's home, and a verdict the user's cache holds never answers a test."""
    if hasattr(config, "workerinput"):
        return
    if hasattr(config.option, "loadscopereorder"):  # the units keep the order pytest_collection_modifyitems gives them
        config.option.loadscopereorder = False
    if config.option.basetemp is None:
        config.option.basetemp = tempfile.mkdtemp(prefix="lmms_tasks-pytest-")
        setattr(config, _OWN_BASETEMP, config.option.basetemp)
    media = tempfile.mkdtemp(prefix="lmms_tasks-media-")
    setattr(config, _OWN_MEDIA_CACHE, media)
    os.environ[MEDIA_CACHE_ENV] = media


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The run's own temporary root is removed when every test passed, kept (and named) otherwise."""
    media = getattr(session.config, _OWN_MEDIA_CACHE, None)
    if media is not None:
        shutil.rmtree(media, ignore_errors=True)
    own = getattr(session.config, _OWN_BASETEMP, None)
    if own is None:
        return
    if exitstatus == 0:
        shutil.rmtree(own, ignore_errors=True)
    else:
        session.config.get_terminal_writer().line(f"\ntemporary files of this run: {own}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """A test whose captured output holds loguru's "Logging error" (a sink writing to a closed stream, ...)
    fails, even when its own assertions passed."""
    outcome = yield
    report = outcome.get_result()
    if report.passed and LOGURU_ERROR in report.capstderr + report.capstdout:
        report.outcome = "failed"
        report.longrepr = f"loguru reported a logging error during {report.when} (see the captured output): {LOGURU_ERROR}"


# Seconds one pytest-xdist worker spends on a test module (its tests and the fixtures they build), measured
# with `--durations` on the 2-core machine; the modules not named here take a few seconds. For queueing only
# (utils/testing/xdist_units.py): a stale or missing figure costs minutes, never a result.
MODULE_SECONDS: dict[str, float] = {
    "tests/humaneval_v/test_containers.py": 170,
    "tests/foundation/test_readme_commands.py": 230,
    "tests/bad_input/test_exit_matrix.py": 940,  # 16 lmms-eval commands, one per case (3 with accelerate's 2 ranks)
    "tests/upstream/test_stack.py": 810,  # the stack's build, then one pytest per PR
    "tests/upstream/test_export_real.py": 420,
    "tests/foundation/test_newcomer_paths.py": 310,
    "tests/backends/test_qwen2_5_vl_e2e.py": 190,
    "tests/humaneval_v/test_e2e.py": 170,
    "tests/bad_input/test_runs.py": 140,
    "tests/conformance/test_cli_replay.py": 120,
    "tests/official/test_humaneval_v.py": 140,
    "tests/judge/test_rescore.py": 125,
    "tests/statistics/test_demo_statistics.py": 120,
    "tests/docs/test_readme_claims.py": 110,
    "tests/sandbox/test_sandbox_hostile.py": 100,
    "tests/haerae_vision/test_e2e.py": 100,
    "tests/vlm2_bench/test_e2e.py": 100,
    "tests/foundation/test_packaging.py": 130,
    "tests/humaneval_v/test_scored_once_e2e.py": 90,
    "tests/humaneval_v/test_v1.py": 80,
    "tests/report/test_report_browser.py": 70,
    "tests/official/test_round_trip.py": 60,
    "tests/compat/test_patched_lmms_eval.py": 60,
}
# Queued first, in this order: the units that build the run's two longest shared fixtures (the two-model demo,
# the export-upstream stack; utils/testing/built_once.py), one on each worker, so that neither waits for the
# other's build and both are ready before most of the units that use them start.
FIRST = ("tests/foundation/test_multiprocess_parity.py", "tests/upstream/test_stack.py::test_applied_pr_by_pr_each_prs_tests_pass")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook, which reads the markers into the node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`-n N --dist loadgroup`, as scripts/test.sh runs the suite) a worker takes whole units:
    a module whose tests share a module-scoped fixture, or else a single test; queued longest first (see
    utils/testing/xdist_units.py; `pytest_configure` turns off pytest-xdist's own reordering by number of
    tests). In one process the tests keep their file order."""
    from lmms_tasks.utils.testing.xdist_units import plan

    plan(items, MODULE_SECONDS, FIRST, reorder=bool(getattr(config.option, "loadgroup", False)))


_UNGROUPED = "_lmms_tasks_ungrouped"


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """On a pytest-xdist worker under `--dist loadgroup`: the groups must have reached the node ids (xdist appends
    `@<group>`). Where they did not (a pytest / pytest-xdist pair that disagree on where a node id lives: pytest
    9.2 with pytest-xdist 3.8), every module fixture would silently be built again on each worker; every test
    then fails at once with the reason (`_refuse_ungrouped_runs`)."""
    config = session.config
    if hasattr(config, "workerinput") and config.getvalue("loadgroup") and session.items and not any("@" in item.nodeid for item in session.items):
        setattr(config, _UNGROUPED, True)


@pytest.fixture(scope="session", autouse=True)
def _refuse_ungrouped_runs(request: pytest.FixtureRequest) -> None:
    if getattr(request.config, _UNGROUPED, False):
        pytest.fail(
            f"pytest-xdist's --dist loadgroup did not group the tests (pytest {pytest.__version__}): install the versions setup.cfg's "
            "[test] extra names (scripts/setup_env.sh does), or run in one process (LMMS_TASKS_TEST_WORKERS=0)",
            pytrace=False,
        )


@pytest.fixture(scope="session")
def demo_two_models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    """`python -m lmms_tasks demo --models 2` once per test session (every task of every benchmark, two
    stand-in models): (work dir, DemoOutcome). Shared by the report tests and the README tests."""
    from lmms_tasks import BENCHMARKS
    from lmms_tasks.utils.testing.demo import run_demo

    return built_once(tmp_path_factory, "demo_two_models", lambda work: (work, run_demo(list(BENCHMARKS), work, quiet=True, models=2, in_process=True)))


def include_path_only(fixture: Any) -> Any:
    """Marks a fixture that only makes sense while the tasks live outside lmms-eval (export-upstream drops it)."""
    return fixture


@include_path_only
@pytest.fixture(scope="session")
def patched_lmms_eval(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the installed lmms-eval with our patch series applied (see utils/testing/patched.py);
    run a command with `patched.env(path, env)` to use it."""
    from lmms_tasks.utils.testing.patched import patched_copy

    return built_once(tmp_path_factory, "patched_lmms_eval", patched_copy)


@pytest.fixture(scope="session")
def tiny_vlm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny Qwen2.5-VL, built once per test session (a few seconds, nothing downloaded)."""
    from lmms_tasks.utils.testing.oplog import op
    from lmms_tasks.utils.testing.tiny_vlm import build

    def make(folder: Path) -> Path:
        with op("tiny-model"):
            return build(folder / "model")

    return built_once(tmp_path_factory, "tiny-qwen2.5-vl", make)


@pytest.fixture
def stand_in() -> Iterator[StandInServer]:
    """A fresh stand-in server on 127.0.0.1 answering "" unless scripted."""
    with StandInServer(default_reply="") as server:
        yield server


@pytest.fixture
def hermetic_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point every cache at tmp_path and drop credentials, for tests that run code in-process."""
    for key in ("OPENAI_API_KEY", "OPENAI_API_BASE", "OPENAI_BASE_URL", "AZURE_OPENAI_API_KEY", "HF_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf_datasets"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("LMMS_TASKS_JUDGE_CACHE_DIR", str(tmp_path / "judge_cache"))
    monkeypatch.setenv("LMMS_TASKS_EXEC_CACHE_DIR", str(tmp_path / "exec_cache"))
    return tmp_path


@pytest.fixture
def count_calls(monkeypatch: pytest.MonkeyPatch) -> Callable[[collections.Counter, str, Any, str], None]:
    """`count_calls(counts, name, owner, attribute)`: every call of `owner.attribute` adds 1 to `counts[name]` (the
    real function still runs; undone after the test). For tests that a piece of work is done once."""

    def count(counts: collections.Counter, name: str, owner: Any, attribute: str) -> None:
        real = getattr(owner, attribute)

        def counted(*args: Any, **kwargs: Any) -> Any:
            counts[name] += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, attribute, counted)

    return count
