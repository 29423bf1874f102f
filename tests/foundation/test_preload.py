"""The suite's preload server (utils/testing/startup_site/lmms_tasks_test_preload.py): a hooked process runs its
command line in a fork of the server's imports only where nothing that decides them differs, and is then, seen
from outside, the process it would have been: the same output, exit status, files and signals. Each case runs the
same command twice, once asking a server that preloads a small stand-in package and once as usual, and compares;
the ops log says whether the fork ran it (`preload hit`) or the server refused (`preload refused <why>`)."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmms_tasks.utils.testing.e2e import console_script, offline_env
from lmms_tasks.utils.testing.oplog import OPS_LOG_ENV
from lmms_tasks.utils.testing.startup_hook import (
    PRELOAD_ENV,
    hooked,
    inherited_environment,
    running,
    server_socket,
    start_preload,
    start_suite_preload,
    stop_preload,
)

PACKAGE = """
import ctypes
import importlib.util
import os

# an OpenMP runtime, which reads OMP_* when it loads (torch's own copy, as torch loads it)
ctypes.CDLL(os.path.join(importlib.util.find_spec("torch").submodule_search_locations[0], "lib", "libgomp.so.1"))

SETTING = os.environ.get("PRELOADED_FAKE_SETTING", "default")  # read while preloading: must be the same
os.environ.setdefault("PRELOADED_FAKE_DIR", "/tmp/fake-dir")  # set by the import, as torch sets TORCHINDUCTOR_CACHE_DIR
"""
SHOW = "import sys; print('preloaded' if 'preloaded_fake' in sys.modules else 'started as usual')"


def _fake_env(root: Path, packages: dict[str, dict[str, str]]) -> dict[str, str]:
    """The suite's environment with the fake `packages` ({name: {file: source}}) written under `root` and on
    PYTHONPATH, and none of the variables the cases set."""
    lib = root / "lib"
    for package, files in packages.items():
        (lib / package).mkdir(parents=True)
        for name, source in files.items():
            (lib / package / name).write_text(source)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRELOADED_FAKE_", "TIERED_FAKE_", "UNRELATED_FAKE", "FSSPEC", "OMP_"))}
    env["PYTHONPATH"] = str(lib)
    return env


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("preload")
    env = _fake_env(root, {"preloaded_fake": {"__init__.py": PACKAGE}})
    folder = root / "servers"
    _wait_for(start_preload(folder, env, modules=("preloaded_fake",)))
    yield env, folder
    stop_preload(folder)


def _wait_for(socket: Path, bound: float = 300) -> None:
    """Wait for a server's socket, within a bound no correct start reaches (300 s: it imports one small module)."""
    deadline = time.monotonic() + bound
    while not socket.exists():
        logs = "".join(log.read_text() for log in socket.parent.glob("*.log"))
        assert time.monotonic() < deadline and "Traceback" not in logs, logs
        time.sleep(0.05)


def run(server, tmp_path: Path, args: list[str], *, preload: bool = True, extra: dict[str, str] | None = None, **kwargs):
    """Run `python ARGS` in a fresh folder under `tmp_path`, asking the server (or not): (process, ops-log lines)."""
    env, folder = server
    work = tmp_path / ("preloaded" if preload else "usual")
    work.mkdir(parents=True, exist_ok=True)
    log = tmp_path / f"ops-{'preloaded' if preload else 'usual'}.log"
    log.unlink(missing_ok=True)
    full = hooked({**env, PRELOAD_ENV: str(folder) if preload else "", OPS_LOG_ENV: str(log), **(extra or {})})
    kwargs.setdefault("capture_output", True)
    proc = subprocess.run([sys.executable, *args], env=full, cwd=work, text=True, timeout=600, **kwargs)
    lines = [line.split("\t")[1] for line in log.read_text().splitlines() if line.startswith("preload\t")] if log.exists() else []
    return proc, lines


PROGRAMS = {
    "status and both streams": ["-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"],
    "exit with a message": ["-c", "import sys; sys.exit('bye')"],
    "an uncaught exception": ["-c", "def f():\n    raise ValueError('boom')\nf()"],
    "KeyboardInterrupt": ["-c", "raise KeyboardInterrupt"],
    "killed by its own signal": ["-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"],
    "argv, cwd, sys.path[0], environment": ["-c", "import os, sys; print(sys.argv, repr(sys.path[0]), os.listdir(os.getcwd()), os.environ['X_ARG'])", "a", "b"],
    "the preload's own setting and variable": ["-c", "import os, preloaded_fake; print(preloaded_fake.SETTING, os.environ['PRELOADED_FAKE_DIR'])"],
    "stdin": ["-c", "import sys; print(sys.stdin.read().upper())"],
    "threads, atexit, an unclosed file": [
        "-c",
        "import atexit, threading\nf = open('kept.txt', 'w'); f.write('kept')\nmain_done = threading.Event()\n"
        "threading.Thread(target=lambda: (main_done.wait(), print('thread', flush=True))).start()\natexit.register(print, 'atexit')\n"
        "print('main', flush=True)\nmain_done.set()",
    ],
    "a module (-m)": ["-m", "prog_mod", "x"],
    "a script": ["prog.py", "y"],
    "stdout closed by the program": ["-c", "import sys; print('once'); sys.stdout.close()"],
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_a_preloaded_run_is_the_process_it_would_have_been(name: str, server, tmp_path: Path) -> None:
    outcomes = {}
    for preload in (True, False):
        work = tmp_path / ("preloaded" if preload else "usual")
        work.mkdir()
        (work / "prog_mod.py").write_text("import sys; print(__name__, sys.argv[1:], sys.path[0] == __import__('os').getcwd())\n")
        (work / "prog.py").write_text("import os, sys; print(__name__, os.path.basename(__file__), sys.argv, sys.path[0] == os.getcwd())\n")
        proc, lines = run(server, tmp_path, PROGRAMS[name], preload=preload, extra={"X_ARG": "given"}, input="some input")
        kept = (work / "kept.txt").read_text() if (work / "kept.txt").exists() else None
        outcomes[preload] = (proc.returncode, proc.stdout, proc.stderr, kept)
        assert lines == (["hit"] if preload else []), lines
    assert outcomes[True] == outcomes[False]


def test_the_outcomes_compared_are_the_expected_ones(server, tmp_path: Path) -> None:
    """The comparisons above are between real outcomes: a few, as a cold interpreter gives them."""
    for name, status, out in (
        ("status and both streams", 3, "out\n"),
        ("KeyboardInterrupt", -signal.SIGINT, ""),
        ("killed by its own signal", -signal.SIGTERM, ""),
        ("threads, atexit, an unclosed file", 0, "main\nthread\natexit\n"),
        ("the preload's own setting and variable", 0, "default /tmp/fake-dir\n"),
    ):
        proc, lines = run(server, tmp_path / name.replace(" ", "-"), PROGRAMS[name], extra={"X_ARG": "given"})
        assert (proc.returncode, proc.stdout, lines) == (status, out, ["hit"]), name


def _lower_nofile() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 200), hard))


REFUSALS = [
    ("a variable the preload read", {"PRELOADED_FAKE_SETTING": "other"}, {}, "environment variable PRELOADED_FAKE_SETTING"),
    ("a variable the preload sets, set otherwise", {"PRELOADED_FAKE_DIR": "/elsewhere"}, {}, "environment variable PRELOADED_FAKE_DIR"),
    ("a preloaded module shadowed on the path", {"PYTHONPATH": "{shadow}{sep}{lib}"}, {}, "module preloaded_fake resolves elsewhere"),
    ("another sitecustomize on the path", {"PYTHONPATH": "{custom}{sep}{lib}"}, {}, "another sitecustomize"),
    ("other resource limits", {}, {"preexec_fn": _lower_nofile}, "different limits"),
]


@pytest.mark.parametrize(("name", "extra", "kwargs", "reason"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_whatever_could_change_an_import_starts_the_process_as_usual(name, extra, kwargs, reason, server, tmp_path: Path) -> None:
    shadow, custom = tmp_path / "shadow", tmp_path / "custom"
    (shadow / "preloaded_fake").mkdir(parents=True)
    (shadow / "preloaded_fake" / "__init__.py").write_text("SETTING = 'shadow'\n")
    custom.mkdir()
    (custom / "sitecustomize.py").write_text("print('chained')\n")
    lib = server[0]["PYTHONPATH"]
    extra = {k: v.format(shadow=shadow, custom=custom, lib=lib, sep=os.pathsep) for k, v in extra.items()}
    program = SHOW + "; import preloaded_fake, os; print(preloaded_fake.SETTING, os.environ.get('PRELOADED_FAKE_DIR'))"
    proc, lines = run(server, tmp_path, ["-c", program], extra=extra, **kwargs)
    usual, _ = run(server, tmp_path, ["-c", program], preload=False, extra=extra, **kwargs)
    assert lines == [f"refused {reason}"]
    assert proc.returncode == 0 and proc.stdout == usual.stdout and "started as usual" in proc.stdout, proc.stderr


OMP_THREADS = (
    "import ctypes, importlib.util, os, sys, preloaded_fake\n"
    "gomp = ctypes.CDLL(os.path.join(importlib.util.find_spec('torch').submodule_search_locations[0], 'lib', 'libgomp.so.1'))\n"
    "print(gomp.omp_get_max_threads(), sys.stdout.write_through, type(sys.stdout.buffer).__name__)"
)
KINDS = [
    # a variable the preloaded OpenMP runtime read when it loaded: a fork of the server could not hold another value
    ("a variable C code reads when a library loads", ["-c", OMP_THREADS], {"OMP_NUM_THREADS": "1"}),
    ("an interpreter option", ["-u", "-c", OMP_THREADS], {}),  # as torch's launcher starts each rank
]


@pytest.mark.parametrize(("name", "args", "extra"), KINDS, ids=[k[0] for k in KINDS])
def test_another_kind_of_process_gets_a_server_of_its_own_from_the_second_on(name, args, extra, server, tmp_path: Path) -> None:
    usual, _ = run(server, tmp_path / "usual", args, preload=False, extra=extra)
    assert usual.returncode == 0, usual.stderr
    kinds = set(server[1].glob("*.seen"))
    first, first_lines = run(server, tmp_path / "first", args, extra=extra)
    second, second_lines = run(server, tmp_path / "second", args, extra=extra)
    assert (first_lines, second_lines) == (["no server: first of its kind"], ["no server: starting its server"])
    (seen,) = set(server[1].glob("*.seen")) - kinds
    _wait_for(seen.with_suffix(".sock"))
    third, third_lines = run(server, tmp_path / "third", args, extra=extra)
    assert third_lines == ["hit"]
    assert first.stdout == second.stdout == third.stdout == usual.stdout != "2 False BufferedWriter\n"  # what the suite's server would give


def test_an_inherited_descriptor_starts_as_usual(server, tmp_path: Path) -> None:
    read, write = os.pipe()
    try:
        proc, lines = run(server, tmp_path, ["-c", SHOW], pass_fds=(write,))
    finally:
        os.close(read)
        os.close(write)
    assert (proc.stdout, lines) == ("started as usual\n", [])  # not even asked: the fork could not hold that descriptor
    proc, lines = run(server, tmp_path, ["-c", SHOW])
    assert (proc.stdout, lines) == ("preloaded\n", ["hit"])


WAITING = """
import os, signal, sys, time
def stop(signum, frame):
    print('got', signal.Signals(signum).name, flush=True)
    sys.exit(7)
signal.signal(signal.SIGTERM, stop)
open('pid', 'w').write(str(os.getpid()))
print('ready', flush=True)
time.sleep(600)
"""


def _start(server, tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    env, folder = server
    work = tmp_path / "work"
    work.mkdir()
    full = hooked({**env, PRELOAD_ENV: str(folder), OPS_LOG_ENV: str(tmp_path / "ops.log")})
    proc = subprocess.Popen([sys.executable, "-c", WAITING], env=full, cwd=work, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "ready\n"
        deadline = time.monotonic() + 120  # the stand-in logs its hit as the fork starts: no correct run takes this long
        while not (tmp_path / "ops.log").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (tmp_path / "ops.log").read_text().split("\t")[1] == "hit"
    except BaseException:
        proc.kill()
        raise
    return proc, work


def test_a_signal_to_the_process_reaches_the_command(server, tmp_path: Path) -> None:
    proc, work = _start(server, tmp_path)
    assert int((work / "pid").read_text()) != proc.pid  # the command runs in the fork
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=600)
    assert (proc.returncode, out) == (7, "got SIGTERM\n")


def test_a_killed_process_takes_its_command_with_it(server, tmp_path: Path) -> None:
    proc, work = _start(server, tmp_path)
    fork = int((work / "pid").read_text())
    proc.kill()
    proc.wait(timeout=600)
    deadline = time.monotonic() + 120  # a bound no correct run reaches: the fork is killed as soon as its stand-in dies
    while running(fork) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not running(fork)


@pytest.fixture
def suite_servers(tmp_path: Path) -> Iterator[str]:
    """The run's folder of preload servers (tests/conftest.py); where the preload is off for this run (set and
    empty), a folder of the test's own where the suite's servers are started as the conftest starts them."""
    folder = os.environ.get(PRELOAD_ENV)
    if folder:
        yield folder
        return
    folder = tmp_path / "servers"
    start_suite_preload(folder, dict(os.environ))  # this test's process runs what it starts
    try:
        yield str(folder)
    finally:
        stop_preload(folder)


def test_the_suites_own_processes_start_in_its_preload(suite_servers: str, tmp_path: Path) -> None:
    """The suite's server (tests/conftest.py) accepts a process of the suite: were its environment refused, every
    lmms-eval run would silently pay its imports again."""
    _wait_for(server_socket(Path(suite_servers), os.environ), bound=600)  # it imports torch and the rest once
    log = tmp_path / "ops.log"
    env = hooked({**os.environ, PRELOAD_ENV: suite_servers, OPS_LOG_ENV: str(log)})
    proc = subprocess.run([sys.executable, "-c", "import sys; print('torch' in sys.modules)"], env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert (proc.returncode, proc.stdout, log.read_text().split("\t")[1]) == (0, "True\n", "hit"), proc.stderr


# --- the lmms-eval tier: a second server per kind for the command lines of one package ----------------------------

TIERED = {
    "__init__.py": "",
    "heavy.py": "import os\nSETTING = os.environ.get('TIERED_FAKE_SETTING', 'default')  # read while preloading the tier\n",
    "__main__.py": "import sys\nfrom tiered_fake.cli import main\nsys.exit(main())\n",
    "cli.py": "import sys\n\n\ndef main():\n    import tiered_fake.heavy as heavy\n    print(__name__, heavy.SETTING, sys.argv[1:])\n    return 4\n",
    "show.py": "import sys\nprint('tiered_fake.heavy' in sys.modules, 'preloaded_fake' in sys.modules)\n",
}
CONSOLE_SCRIPT = "#!{python}\nimport sys\nfrom tiered_fake.cli import main\nif __name__ == '__main__':\n    sys.exit(main())\n"


@pytest.fixture(scope="module")
def tiered(tmp_path_factory: pytest.TempPathFactory):
    """A server that preloads `preloaded_fake` and fsspec's configuration (which copies the environment and keeps
    FSSPEC_*) for every process and, for the command lines that run the package `tiered_fake`, its `heavy` too."""
    root = tmp_path_factory.mktemp("tiered")
    env = _fake_env(root, {"preloaded_fake": {"__init__.py": PACKAGE}, "tiered_fake": TIERED})
    env["UNRELATED_FAKE"] = "the server's"  # read by nothing but the copy of the environment
    (root / "tiered-fake").write_text(CONSOLE_SCRIPT.format(python=sys.executable))
    folder = root / "servers"
    _wait_for(start_preload(folder, env, modules=("preloaded_fake", "fsspec.config"), tiers={"tiered_fake": ("tiered_fake.heavy",)}))
    deadline = time.monotonic() + 300  # a bound no correct start reaches: the tier imports one small module more
    while len(list(folder.glob("*.sock"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    yield env, folder, root / "tiered-fake"
    stop_preload(folder)


TIER_CASES = [
    # (name, command line, extra environment, the ops-log lines of the preloaded run, the status and stdout of both)
    ("a module of the package (-m)", ["-m", "tiered_fake", "x"], {}, ["hit tiered_fake"], (4, "tiered_fake.cli default ['x']\n")),
    ("the package's console script", ["{script}", "y"], {}, ["hit tiered_fake"], (4, "tiered_fake.cli default ['y']\n")),
    (
        "a variable the tier read, set otherwise",
        ["-m", "tiered_fake"],
        {"TIERED_FAKE_SETTING": "other"},
        ["tiered_fake refused environment variable TIERED_FAKE_SETTING", "hit"],
        (4, "tiered_fake.cli other []\n"),
    ),
    (
        "a variable the first server read, set otherwise",
        ["-m", "tiered_fake"],
        {"PRELOADED_FAKE_SETTING": "other"},
        ["tiered_fake refused environment variable PRELOADED_FAKE_SETTING", "refused environment variable PRELOADED_FAKE_SETTING"],
        (4, "tiered_fake.cli default []\n"),
    ),
    ("another command line", ["-m", "prog_mod"], {}, ["hit"], (0, "[]\n")),
    ("a variable of the prefix the environment was copied for", ["-m", "prog_mod"], {"FSSPEC_FAKE": '{"k": "v"}'}, ["refused environment variable FSSPEC_FAKE"], (0, "[]\n")),
    ("any other variable, with the environment copied", ["-m", "prog_mod"], {"UNRELATED_FAKE": "another"}, ["hit"], (0, "[]\n")),
]


@pytest.mark.parametrize(("name", "args", "extra", "lines", "outcome"), TIER_CASES, ids=[c[0] for c in TIER_CASES])
def test_a_packages_command_lines_start_in_its_tier(name, args, extra, lines, outcome, tiered, tmp_path: Path) -> None:
    env, folder, script = tiered
    args = [a.format(script=script) for a in args]
    outcomes = {}
    for preload in (True, False):
        work = tmp_path / ("preloaded" if preload else "usual")
        work.mkdir()
        (work / "prog_mod.py").write_text("import sys; print(sys.argv[1:])\n")
        proc, logged = run((env, folder), tmp_path, args, preload=preload, extra=extra)
        outcomes[preload] = (proc.returncode, proc.stdout, proc.stderr)
        assert logged == (lines if preload else [])
    assert outcomes[True] == outcomes[False]
    assert outcomes[True][:2] == outcome, outcomes[True][2]


def test_the_tier_holds_its_modules_and_the_first_server_does_not(tiered, tmp_path: Path) -> None:
    """The outcomes above compare forks of the tier with cold starts: a tier's fork holds the package's modules, a
    fork of the first server does not."""
    env, folder, _ = tiered
    shown = {}
    for args in (["-m", "tiered_fake.show"], ["-c", "import runpy; runpy.run_module('tiered_fake.show')"]):
        proc, lines = run((env, folder), tmp_path / args[0], args)
        shown[args[0]] = (proc.stdout, lines)
    assert shown == {"-m": ("True True\n", ["hit tiered_fake"]), "-c": ("False True\n", ["hit"])}


def test_a_kinds_first_start_gives_its_servers_environment(tmp_path: Path) -> None:
    """The suite starts the servers of its two most common kinds; where both are one kind, the first start holds."""
    env = _fake_env(tmp_path, {"preloaded_fake": {"__init__.py": PACKAGE}})
    folder = tmp_path / "servers"
    socket = start_preload(folder, env, modules=("preloaded_fake",))
    try:
        _wait_for(socket)
        assert start_preload(folder, {**env, "PRELOADED_FAKE_SETTING": "other"}, modules=("preloaded_fake",)) == socket
        outcomes = [run((env, folder), tmp_path / str(i), ["-c", SHOW], extra=extra)[1] for i, extra in enumerate(({}, {"PRELOADED_FAKE_SETTING": "other"}))]
    finally:
        stop_preload(folder)
    deadline = time.monotonic() + 120  # a bound no correct run reaches: the one server is stopped, and waited for
    while _servers_of(folder) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _servers_of(folder) == []
    assert "Traceback" not in "".join(log.read_text() for log in folder.glob("*.log"))  # no second server, whose socket was taken
    assert outcomes == [["hit"], ["refused environment variable PRELOADED_FAKE_SETTING"]]


def _servers_of(folder: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and running(int(entry.name)) and f"serve({str(folder)!r}".encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_the_environment_children_get_holds_what_c_code_set() -> None:
    """GNU readline, which pytest loads, exports LINES and COLUMNS with setenv: the workers have them, os.environ
    here does not show them, and a server started with os.environ would refuse every worker's process that reads them."""
    import ctypes

    libc = ctypes.CDLL(None)
    libc.setenv(b"PRELOAD_TEST_C_SET", b"set by C", 1)
    try:
        assert "PRELOAD_TEST_C_SET" not in os.environ
        inherited = inherited_environment()
    finally:
        libc.unsetenv(b"PRELOAD_TEST_C_SET")
    assert inherited["PRELOAD_TEST_C_SET"] == "set by C"
    assert {k: v for k, v in inherited.items() if k in os.environ} == dict(os.environ)


def test_the_suites_lmms_eval_runs_start_in_its_lmms_eval_tier(suite_servers: str, tmp_path: Path) -> None:
    """An lmms-eval command line of a test (offline_env, the suite's Hugging Face caches) is taken by the suite's
    lmms-eval server: were its environment refused, every run would import transformers and lmms-eval again."""
    env = offline_env("http://127.0.0.1:9", tmp_path)
    _wait_for(server_socket(Path(suite_servers), env, "lmms_eval"), bound=600)  # it imports torch, lmms-eval once
    log = tmp_path / "ops.log"
    command = [console_script(), "--help"]
    proc = subprocess.run(command, env=hooked({**env, PRELOAD_ENV: suite_servers, OPS_LOG_ENV: str(log)}), capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert (proc.returncode, log.read_text().split("\t")[1]) == (0, "hit lmms_eval"), proc.stderr
