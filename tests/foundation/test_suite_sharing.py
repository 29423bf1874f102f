"""How the suite shares its work between pytest-xdist workers: session fixtures built once per run whatever the
number of workers (utils/testing/built_once.py), and the units the workers take, longest first
(utils/testing/xdist_units.py)."""

from __future__ import annotations

import multiprocessing
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from lmms_tasks.utils.testing import built_once as built_once_module
from lmms_tasks.utils.testing.built_once import BuiltElsewhereError, built_once
from lmms_tasks.utils.testing.xdist_units import plan


class _Factory:
    """The part of pytest's TempPathFactory that built_once uses, for one worker's own root."""

    def __init__(self, basetemp: Path) -> None:
        self.basetemp = basetemp

    def getbasetemp(self) -> Path:
        return self.basetemp

    def mktemp(self, name: str) -> Path:
        path = self.basetemp / f"{name}0"
        path.mkdir(parents=True)
        return path


def _build(folder: Path) -> dict[str, Any]:
    with open(folder.parent.parent / "builds.log", "a", encoding="utf-8") as log:
        log.write(f"{os.getpid()}\n")
    time.sleep(1)  # long enough for the other workers to ask while it is being built
    (folder / "made").write_text("x", encoding="utf-8")
    return {"folder": folder, "pid": os.getpid()}


def _fail(folder: Path) -> None:
    with open(folder.parent.parent / "builds.log", "a", encoding="utf-8") as log:
        log.write(f"{os.getpid()}\n")
    raise ValueError("the build broke")


def _worker(root: str, index: int, failing: bool, queue: Any) -> None:
    os.environ["PYTEST_XDIST_WORKER"] = f"gw{index}"
    factory = _Factory(Path(root) / f"popen-gw{index}")
    factory.basetemp.mkdir(parents=True, exist_ok=True)
    try:
        queue.put(("built", built_once(factory, "thing", _fail if failing else _build)))
    except BuiltElsewhereError as exc:
        queue.put(("elsewhere", str(exc)))
    except ValueError as exc:
        queue.put(("raised", str(exc)))


def _run_workers(root: Path, failing: bool, n: int = 3) -> list[tuple[str, Any]]:
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    workers = [context.Process(target=_worker, args=(str(root), i, failing, queue)) for i in range(n)]
    for worker in workers:
        worker.start()
    results = [queue.get(timeout=300) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
    return results


def test_workers_of_one_run_share_one_build(tmp_path: Path) -> None:
    results = _run_workers(tmp_path, failing=False)
    assert [kind for kind, _ in results] == ["built"] * 3
    builds = (tmp_path / "builds.log").read_text(encoding="utf-8").split()
    assert len(builds) == 1  # one worker built it; the others read its value back
    assert {value["pid"] for _, value in results} == {int(builds[0])}
    folder = results[0][1]["folder"]
    assert folder == tmp_path / built_once_module.SHARED_DIR / "thing" and (folder / "made").is_file()


def test_a_failed_build_is_not_repeated_by_the_other_workers(tmp_path: Path) -> None:
    results = sorted(_run_workers(tmp_path, failing=True))
    assert [kind for kind, _ in results] == ["elsewhere", "elsewhere", "raised"]
    assert all("ValueError: the build broke" in message for kind, message in results if kind == "elsewhere")
    assert len((tmp_path / "builds.log").read_text(encoding="utf-8").split()) == 1


def test_without_xdist_each_session_builds_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    value = built_once(_Factory(tmp_path / "root"), "thing", lambda folder: folder)
    assert value == tmp_path / "root" / "thing0" and not (tmp_path / built_once_module.SHARED_DIR).exists()


# -- the units the workers take --------------------------------------------------------------------------------


@dataclass
class _FixtureDef:
    scope: str


@dataclass
class _FixtureInfo:
    name2fixturedefs: dict[str, list[_FixtureDef]]


@dataclass
class _Item:
    nodeid: str
    scopes: dict[str, str] = field(default_factory=dict)  # fixture -> its scope
    marks: tuple[str, ...] = ()
    added: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._fixtureinfo = _FixtureInfo({name: [_FixtureDef(scope)] for name, scope in self.scopes.items()})

    def get_closest_marker(self, name: str) -> Any:
        return name if name in self.marks else None

    def add_marker(self, marker: Any) -> None:
        self.added.append(marker)

    @property
    def group(self) -> str:
        (mark,) = [m for m in self.added if m.name == "xdist_group"]
        return mark.args[0]


def _items() -> list[_Item]:
    return [
        _Item("tests/a/test_shared.py::test_one", {"runs": "module", "tmp_path": "function"}),
        _Item("tests/a/test_shared.py::test_two", {"tmp_path": "function"}),
        _Item("tests/a/test_cases.py::test_quick"),
        _Item("tests/a/test_cases.py::test_case[x]", {"demo": "session"}, marks=("e2e",)),
        _Item("tests/a/test_cases.py::test_case[y]", {"demo": "session"}, marks=("e2e",)),
        _Item("tests/b/test_small.py::test_small"),
        _Item("tests/b/test_first.py::test_pr[1]"),
        _Item("tests/b/test_first.py::test_pr[2]"),
        _Item("tests/b/test_first.py::test_other"),
    ]


def test_a_module_sharing_a_module_fixture_is_one_unit_any_other_test_is_its_own() -> None:
    items = _items()
    units = plan(items, {}, (), reorder=False)
    assert [item.nodeid for item in items] == [item.nodeid for item in _items()]  # not reordered
    assert units["tests/a/test_shared.py"] == items[:2]  # test_two joins its module's unit, fixture or not
    assert all(len(members) == 1 for unit, members in units.items() if unit != "tests/a/test_shared.py")
    assert len(units) == 1 + 7 and len({item.group for item in items}) == len(units)
    assert all(item.group == unit for unit, members in units.items() for item in members)


def test_units_are_queued_first_named_then_longest_first() -> None:
    items = _items()
    seconds = {"tests/a/test_cases.py": 41.0, "tests/a/test_shared.py": 30.0}
    units = plan(items, seconds, ("tests/b/test_first.py::test_pr", "tests/b/test_small.py"), reorder=True)
    # test_cases.py: 41 s shared by weight (20, 20, 1): 20 s per e2e case, 1 s for the quick one; the shared unit 30 s;
    # test_other: no figure, 0.5 s per test of weight 1
    assert [item.nodeid for item in items] == [
        "tests/b/test_first.py::test_pr[1]",
        "tests/b/test_first.py::test_pr[2]",
        "tests/b/test_small.py::test_small",
        "tests/a/test_shared.py::test_one",
        "tests/a/test_shared.py::test_two",
        "tests/a/test_cases.py::test_case[x]",
        "tests/a/test_cases.py::test_case[y]",
        "tests/a/test_cases.py::test_quick",
        "tests/b/test_first.py::test_other",
    ]
    assert [len(members) for members in units.values()] == [1, 1, 1, 2, 1, 1, 1, 1]
    assert [item.nodeid for members in units.values() for item in members] == [item.nodeid for item in items]


# -- HumanEval-V programs without the official 2 s, in a subprocess ----------------------------------------------


def test_unhurried_site_lifts_the_bound_only_where_it_is_on_the_path(tmp_path: Path) -> None:
    import subprocess
    import sys

    from lmms_tasks.utils.testing.unhurried import SECONDS, unhurried_site

    probe = "import lmms_tasks.utils.humaneval_v.metrics as m, lmms_tasks.utils.humaneval_v.execution as e; print(m.evaluate_programs.__kwdefaults__['limits'].timeout, e.OFFICIAL_LIMITS.timeout)"
    site = unhurried_site(tmp_path / "site", extra="print('extra start-up code')\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    lifted = subprocess.run([sys.executable, "-c", probe], env=dict({**env, "PYTHONPATH": str(site)}), capture_output=True, text=True, timeout=300, check=True)
    official = subprocess.run([sys.executable, "-c", probe], env=dict(env), capture_output=True, text=True, timeout=300, check=True)
    assert lifted.stdout.split() == ["extra", "start-up", "code", str(SECONDS), "2.0"] and SECONDS >= 600
    assert official.stdout.split() == ["2.0", "2.0"]


def test_the_suite_has_no_process_server_and_one_start_up_hook_at_most() -> None:
    """Tests run lmms-eval in their own process or in a real one (utils/testing/e2e.py), never in a fork of a server
    that imported it beforehand: no descriptor passing or pidfd watching in the test machinery, and at most one
    `sitecustomize.py` (the real-backend tests' `generate` tracer) in the checkout."""
    root = Path(__file__).resolve().parents[2]
    machinery = [*sorted((root / "utils" / "testing").rglob("*.py")), *sorted((root / "tests").rglob("*.py"))]
    forbidden = ("SCM_" + "RIGHTS", "pidfd" + "_open", "send" + "_fds", "recv" + "_fds", "_run_module" + "_as_main")
    found = [f"{path.relative_to(root)}: {word}" for path in machinery for word in forbidden if word in path.read_text(encoding="utf-8")]
    assert found == []
    assert not (root / "utils" / "testing" / "startup_site").exists()
    hooks = sorted(str(p.relative_to(root)) for p in root.rglob("sitecustomize.py") if ".venv" not in p.parts and "node_modules" not in p.parts)
    assert len(hooks) <= 1, hooks
