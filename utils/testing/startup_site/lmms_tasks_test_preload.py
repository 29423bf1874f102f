"""The test suite's preloaded start: a server process (`serve`) imports the heavy third-party modules every
lmms-eval process of the suite imports the same way (torch, torchvision with torch._dynamo, numpy, pandas, pyarrow,
PIL, scipy: about 5.5 s of CPU in each process), then waits on a Unix socket. A hooked process (sitecustomize,
with LMMS_TASKS_TEST_PRELOAD naming the run's folder of servers) asks the server of its kind, before anything else
of its own start-up, to run its command line in a fork of those imports, and becomes that fork's stand-in: it
passes its standard streams, forwards the signals it gets and exits as the fork exits (the same status, or the
same signal). A command line that runs a package of TIERS (lmms-eval) asks first that package's server of its kind,
forked from the first once its imports are done, which imports the package's own heavy modules too (transformers,
datasets and the Hugging Face hub through lmms-eval's CLI module: about 2 s more); where it refuses, the first.

A kind is what a fork cannot change: the interpreter options, the interpreter's own variables (PYTHON* other than
PYTHONPATH, LD_*) and the hook's, and, once a server refused a variable that one of its loaded C libraries reads
when it loads (LIBRARY_VARS: OpenMP's OMP_NUM_THREADS, which torch's launcher sets for each rank, ...), the values
of those too. The tests' conftest starts the servers of the suite's two most common kinds; the second process of
any other kind starts that kind's server, detached (a server stops when the run's folder is gone or after IDLE_SECONDS unused).

The fork is the process the command line would have been only where nothing that decides an import can differ, so
the server refuses (and the process starts as usual) unless all of these hold:
- the same interpreter (sys.executable, sys.prefix) with the same options, started as `python -m MODULE`,
  `python SCRIPT` (console scripts) or `python -c CODE`, by the same user;
- the same value of every environment variable the preloaded imports read from Python (recorded while they ran),
  and of every variable read by the C libraries they loaded (from /proc/self/maps), and of the hook's variables;
- the same import system (meta path finders and path hooks) and, for every top-level module already imported,
  the same file found on the process's own sys.path (its first entry included, as the interpreter computes it),
  and no other sitecustomize after this directory's;
- no open file descriptor other than the three standard streams, none of them a terminal; the same resource limits
  and blocked signals.
What differs and is handed over: the command line, the environment (with what the imports set in it, as torch's
TORCHINDUCTOR_CACHE_DIR), the working directory, sys.path, the umask and which of SIGINT/SIGTERM/SIGHUP/SIGQUIT the
process ignores. The fork then ends as an interpreter does (non-daemon threads, atexit, files still open for
writing flushed, the exit status of SystemExit, a traceback and status 1, death by SIGINT on KeyboardInterrupt).
If the stand-in dies (SIGKILL by a test's timeout), the fork is killed.

Standard library only, as sitecustomize.
"""

import json
import os
import signal
import socket
import struct
import sys

ENV = "LMMS_TASKS_TEST_PRELOAD"  # the run's folder of servers
IDLE_SECONDS = 900
PRELOAD = ("torch", "torchvision", "numpy", "pandas", "pyarrow", "pyarrow.parquet", "PIL.Image", "scipy.stats", "aiohttp", "requests", "pydantic", "yaml", "tenacity")
# by the package a command line runs (`-m PACKAGE[.module]`, or a console script of it): what its processes import
# the same way on top (transformers, datasets and the Hugging Face hub through lmms-eval's CLI module, which every
# way of starting lmms-eval imports as a module; the openai client its API models and judge use). A second server,
# forked from the first once PRELOAD is imported, imports these too and serves those command lines only: what
# importing them does (lmms-eval's warning filters, ...) is what the command itself does before it runs anything.
TIERS = {"lmms_eval": ("lmms_eval.__main__", "lmms_eval.cli.dispatch", "openai")}
# the variables C code reads when a shared library loads, by library (a part of the file name in /proc/self/maps):
# the preload records what Python code reads, not these
LIBRARY_VARS = {
    "libc.so": ("LD_", "MALLOC_", "GLIBC_", "LC_", "LANG", "TZ"),
    "libgomp": ("OMP_", "GOMP_"),
    "libiomp": ("OMP_", "KMP_"),
    "libmkl": ("MKL_",),
    "openblas": ("OPENBLAS_", "GOTO_", "OMP_"),
    "libtorch": ("TORCH_", "PYTORCH_"),
    "libc10": ("TORCH_", "PYTORCH_", "C10_"),
    "libcuda": ("CUDA_", "NVIDIA_"),
    "libcublas": ("CUBLAS_",),
    "libarrow": ("ARROW_",),
}
INTERPRETER_VARS = ("PYTHON", "LD_")  # the interpreter's own options (PYTHONPATH is compared as sys.path) and loader
HOOK_VARS = ("LMMS_TASKS_TEST_INDEX_CACHE", "LMMS_TASKS_TEST_DEFER_IMPORTS")
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
LIMITS = ("RLIMIT_AS", "RLIMIT_CORE", "RLIMIT_CPU", "RLIMIT_DATA", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_NPROC", "RLIMIT_STACK")
# code that lists the environment while the preload runs, and the prefix of the names it keeps (anything else
# listing it refuses every process)
# tqdm's envwrap: TQDM_* variables override its defaults; fsspec's config: FSSPEC_* variables set a protocol's options
# (it copies the environment, then keeps those)
ITERATORS = {"tqdm.utils": "TQDM_", "fsspec.config": "FSSPEC_"}
_OURS = ("sitecustomize", __name__)


def _finders():
    return [f"{type(f).__module__}.{type(f).__qualname__}" for f in sys.meta_path if type(f).__module__ not in _OURS], [f"{h.__module__}.{h.__qualname__}" for h in sys.path_hooks]


def _process_state():
    import resource

    return {
        "executable": sys.executable,
        "prefix": sys.prefix,
        "uid": os.getuid(),
        "limits": [resource.getrlimit(getattr(resource, name)) for name in LIMITS],
        "blocked": sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])),
        "finders": _finders(),
    }


def _send(sock, obj, fds=()):
    data = json.dumps(obj).encode()
    header = struct.pack("!I", len(data))
    if fds:
        socket.send_fds(sock, [header], list(fds))
    else:
        sock.sendall(header)
    sock.sendall(data)


def _recv_exact(sock, n):
    chunks = b""
    while len(chunks) < n:
        chunk = sock.recv(n - len(chunks))
        if not chunk:
            raise EOFError
        chunks += chunk
    return chunks


def _recv(sock, with_fds=0):
    if with_fds:
        header, fds, _, _ = socket.recv_fds(sock, 4, with_fds)
        if len(header) < 4:
            header += _recv_exact(sock, 4 - len(header))
    else:
        header, fds = _recv_exact(sock, 4), []
    (size,) = struct.unpack("!I", header)
    return json.loads(_recv_exact(sock, size)), fds


def _append_ops_line(fields):
    """One line of the test suite's ops log (utils/testing/oplog.py), written in one append, if one is asked for."""
    path = os.environ.get("LMMS_TASKS_TEST_OPS_LOG")
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, ("\t".join(fields) + "\n").encode())
        finally:
            os.close(fd)


def _oplog(detail):
    test = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]  # the test that started the process
    _append_ops_line(["preload", " ".join(detail.split())[:200], str(os.getpid()), "0.0", "0.0", test])


def _log_usage(started):
    """The server's line in the ops log: its whole life, and the CPU of its own imports and of every run it forked
    (those are not the children of the tests that started them, whose ops-log lines then leave them out)."""
    import resource
    import time

    while True:  # the finished ones (a fork still running is its stand-in's; it ends with it)
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break
    cpu = sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN) for f in ("ru_utime", "ru_stime"))
    _append_ops_line(["preload-server", "", str(os.getpid()), f"{time.monotonic() - started:.1f}", f"{cpu:.1f}"])


# --- the hooked process -------------------------------------------------------------------------------------------


def _extra_fds():
    extra = []
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2:
            try:
                os.readlink(f"/proc/self/fd/{fd}")  # the listing's own descriptor is closed by now
            except OSError:
                continue
            extra.append(fd)
    return extra


def hand_over(folder):
    """Run this process's command line in a fork of the server of its kind in `folder` and exit as it exits; return
    (having done nothing) where there is none yet or it refuses. The second process of a kind starts its server
    (a kind seen once may never come again: a server costs the imports it saves)."""
    command = _command(sys.orig_argv)
    try:
        if command is None or _extra_fds() or any(os.isatty(fd) for fd in (0, 1, 2)):
            return
        for fd in (0, 1, 2):
            os.fstat(fd)
    except OSError:
        return
    if _where("sitecustomize", _beyond_here(_search_path(command, os.getcwd(), sys.path))) is not None:
        _oplog("refused another sitecustomize")  # it runs in this process only: a fork would not run it
        return
    key, package = kind(command[0], os.environ), _package(command)
    reply, tier = _ask_tiers(folder, key, command[0], package)
    if reply is not None and "prefixes" in reply:  # a variable C code reads at load differs: that value's own server
        finer = kind(command[0], os.environ, reply["prefixes"])
        if finer != key:
            reply, tier = _ask_tiers(folder, finer, command[0], package)
    if reply is None:
        return
    if "refused" in reply:
        _oplog(f"refused {reply['refused']}")
        return
    _oplog(f"hit {tier}" if tier else "hit")
    _stand_in(reply["pid"], reply["sock"])


def _package(command):
    """The top-level package a command line runs: `-m PACKAGE[.module]`, or the package a console script imports
    its entry point from (pip's script: `from PACKAGE.module import main`); None for anything else."""
    import re

    _, mode, target = command
    if mode == "-m":
        return target.partition(".")[0]
    if mode == "script":
        try:
            with open(target, "rb") as fh:
                head = fh.read(4096)
        except OSError:
            return None
        found = re.search(rb"^from ([A-Za-z_][\w.]*) import \w+\s*$", head, re.M) if head.startswith(b"#!") else None
        return found.group(1).decode().partition(".")[0] if found else None
    return None


def _ask_tiers(folder, key, options, package):
    """(reply, tier): the reply of the server of kind `key` for the command line's package where there is one and
    it takes the command, else that of the kind's first server (`tier` None)."""
    if package is not None:
        reply = _ask(folder, f"{key}.{package}", options, first=False)
        if reply is not None and "refused" not in reply:
            return reply, package
        if reply is not None:
            _oplog(f"{package} refused {reply['refused']}")
    return _ask(folder, key, options), None


def _ask(folder, key, options, first=True):
    """The reply of the server of kind `key` (its `sock` kept open where it runs the command line), or None where
    there is none yet (then, with `first`, count this process towards starting it)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(os.path.join(folder, f"{key}.sock"))
    except OSError:
        sock.close()
        if first:
            _first_of_kind(folder, key, options)
        return None
    try:
        request = {
            **_process_state(),
            "orig_argv": sys.orig_argv,
            "argv": sys.argv,
            "env": dict(os.environ),
            "cwd": os.getcwd(),
            "path": sys.path,
            "umask": os.umask(0o022),
            "ignored": [int(s) for s in FORWARDED[:4] if signal.getsignal(s) == signal.SIG_IGN],
        }
        os.umask(request["umask"])
        _send(sock, request, (0, 1, 2))
        reply, _ = _recv(sock)
    except (OSError, EOFError, ValueError):
        sock.close()
        return None
    if "refused" in reply:
        sock.close()
        return reply
    return {**reply, "sock": sock}


def _stand_in(pid, sock):
    """Be the command line's process: forward signals to its fork, exit as it exits."""

    def forward(signum, frame):
        try:
            os.kill(pid, signum)
        except OSError:
            pass

    for signum in FORWARDED:
        if signal.getsignal(signum) != signal.SIG_IGN:
            signal.signal(signum, forward)
    try:
        status = _recv(sock)[0]["status"]
    except (OSError, EOFError, ValueError):
        os._exit(1)
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
        os.kill(os.getpid(), signum)
        os._exit(128 + signum)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def _first_of_kind(folder, key, options):
    for stage, outcome in (("seen", "first of its kind"), ("starting", "starting its server")):
        try:
            os.close(os.open(os.path.join(folder, f"{key}.{stage}"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            continue
        except OSError:
            return
        if stage == "starting":
            start(folder, key, options, os.environ)
        _oplog(f"no server: {outcome}")
        return
    _oplog("no server: being started")


def start(folder, key, options, env):
    """Start the server of kind `key` in `folder`, detached, with the interpreter options and environment of the
    processes of that kind."""
    import subprocess

    with open(os.path.join(folder, f"{key}.log"), "ab") as log:
        subprocess.Popen(
            [sys.executable, *options, "-c", f"import lmms_tasks_test_preload as p; p.serve({folder!r}, {key!r})"],
            env={k: v for k, v in env.items() if k != ENV},
            cwd=folder,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


# --- the server ---------------------------------------------------------------------------------------------------


def _record_env_reads(read):
    environ_type = type(os.environ)
    getitem, contains, iterate = environ_type.__getitem__, environ_type.__contains__, environ_type.__iter__

    def recording_getitem(self, key):
        caller = sys._getframe(1)  # values read while listing (or copying) count as the listing
        if caller.f_code.co_name != "__iter__" and caller.f_globals.get("__name__") not in ITERATORS:
            read.add(key)
        return getitem(self, key)

    def recording_contains(self, key):
        read.add(key)
        return contains(self, key)

    def recording_iter(self):
        frame = sys._getframe(1)
        while frame is not None and frame.f_globals.get("__name__") in ("os", "_collections_abc", "collections.abc"):
            frame = frame.f_back
        reader = frame.f_globals.get("__name__") if frame is not None else None
        read.add(ITERATORS[reader] + "*" if reader in ITERATORS else "*")
        return iterate(self)

    def restore():
        environ_type.__getitem__, environ_type.__contains__, environ_type.__iter__ = getitem, contains, iterate

    environ_type.__getitem__, environ_type.__contains__, environ_type.__iter__ = recording_getitem, recording_contains, recording_iter
    return restore


def _first_path_entry(mode, target, cwd):
    if mode == "-m":
        return cwd
    if mode == "-c":
        return ""
    return os.path.dirname(os.path.realpath(os.path.join(cwd, target)))


def _search_path(command, cwd, path):
    """The process's sys.path as its imports will search it, from any working directory (`""` is its own)."""
    return [_first_path_entry(command[1], command[2], cwd) or cwd, *path]


def _command(orig_argv):
    """(interpreter options, mode, target) of a command line: mode `-m`, `-c` or `script`; None if it is none."""
    rest, options, i = orig_argv[1:], [], 0
    while i < len(rest) and rest[i].startswith("-") and rest[i] not in ("-m", "-c", "-"):
        step = 2 if rest[i] in ("-X", "-W") else 1
        options.extend(rest[i : i + step])
        i += step
    if i + 1 < len(rest) and rest[i] in ("-m", "-c"):
        return options, rest[i], rest[i + 1]
    if i < len(rest) and rest[i] != "-":
        return options, "script", rest[i]
    return None


def kind(options, env, prefixes=()):
    """Which server a process asks: one per interpreter options and values of the interpreter's and the hook's
    variables; where that server refuses a variable its C libraries read when they load (`prefixes`, which its
    refusal names), one per value of those too. Those decide what a fork holds and cannot differ from it."""
    import hashlib

    names = tuple(INTERPRETER_VARS) + tuple(prefixes)
    items = sorted((k, v) for k, v in env.items() if (k.startswith(names) or k in HOOK_VARS) and k not in ("PYTHONPATH", ENV))
    return hashlib.sha256(json.dumps([list(options), items]).encode()).hexdigest()[:16]


def _where(name, path):
    import importlib.machinery

    spec = importlib.machinery.PathFinder.find_spec(name, path)
    if spec is None:
        return None
    return spec.origin, list(spec.submodule_search_locations or [])


def _refusal(request, server):
    for key in ("executable", "prefix", "uid", "limits", "blocked", "finders"):
        if request[key] != server["state"][key]:
            return f"different {key}"
    command = _command(request["orig_argv"])
    if command is None or command[0] != server["options"]:
        return "interpreter options"
    env, own = request["env"], server["env"]
    if "*" in server["read"]:
        return "the preload listed the environment"
    prefixes = tuple(server["prefixes"]) + tuple(name[:-1] for name in server["read"] if name.endswith("*"))
    names = {name for name in server["read"] if not name.endswith("*")} | set(HOOK_VARS)
    names |= {k for k in (*env, *own) if k.startswith(prefixes) and k != "PYTHONPATH"}
    for name in sorted(names):
        # a variable the preload sets may already hold what it sets (a parent that made the same imports)
        if env.get(name) != own.get(name) and not (name in server["changed"] and env.get(name) == server["changed"][name]):
            if name.startswith(tuple(server["prefixes"])):
                return f"environment variable {name}", server["prefixes"]
            return f"environment variable {name}"
    path = _search_path(command, request["cwd"], request["path"])
    for name, where in server["modules"].items():
        if _where(name, path) != where:
            return f"module {name} resolves elsewhere"
    for name, where in server["startup"].items():  # what site would import after this directory's sitecustomize
        if _where(name, _beyond_here(path)) != where:
            return f"another {name}"
    return None


def _beyond_here(path):
    here = os.path.dirname(os.path.abspath(__file__))
    return [p for p in path if os.path.abspath(p) != here]


def serve(folder, key):
    """Import the folder's modules (its `modules` file, one per line; PRELOAD without one), then serve the hooked
    processes of kind `key` on the Unix socket `<folder>/<key>.sock` until terminated, or until the folder is gone
    or nobody asked for IDLE_SECONDS (a run that ended without stopping it). For each package of TIERS (the
    folder's `tiers` file, JSON, where it has a `modules` file), a server forked once those imports are done imports
    that package's modules too and serves the command lines that run it on `<folder>/<key>.<package>.sock`."""
    import time

    try:  # a fork is watched through a pidfd (Linux 5.3): without one, no process is ever handed over
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError) as exc:
        print(f"preload server not started: {exc!r}", file=sys.stderr)
        return
    state = json.loads(json.dumps(_process_state()))  # as a hooked process has it when it asks: before any import
    started = time.monotonic()
    own_env = dict(os.environ)
    modules, tiers = PRELOAD, TIERS
    if os.path.exists(os.path.join(folder, "modules")):
        with open(os.path.join(folder, "modules")) as fh:
            modules = fh.read().split()
        tiers = {}
        if os.path.exists(os.path.join(folder, "tiers")):
            with open(os.path.join(folder, "tiers")) as fh:
                tiers = json.load(fh)
    name = key
    _write_pid(folder, name)
    read = set()
    server = _preload(modules, state, own_env, read)
    for package, more in tiers.items():
        if os.fork() == 0:  # a grandchild, nobody's to reap but the system's: each server's ops line is its own
            if os.fork() != 0:
                os._exit(0)
            started, name = time.monotonic(), f"{key}.{package}"
            _write_pid(folder, name)
            server = _preload(more, state, own_env, read)  # `read` holds what the first imports read
            break
        os.wait()
    _serve(folder, name, server, started)


def _write_pid(folder, name):
    with open(os.path.join(folder, f"{name}.pid"), "w") as fh:
        fh.write(str(os.getpid()))


def _preload(modules, state, own_env, read):
    """Import `modules` (recording into `read` the environment variables they read) and describe what a process
    must share with this one to be run in a fork of it."""
    import gc
    import importlib

    restore = _record_env_reads(read)
    try:
        for name in modules:
            importlib.import_module(name)
    finally:
        restore()
    # what the preload itself set in the environment (torch sets TORCHINDUCTOR_CACHE_DIR), as the same imports
    # in the hooked process would have set it there
    changed = {k: os.environ.get(k) for k in {*own_env, *os.environ} if os.environ.get(k) != own_env.get(k)}
    imported = {}
    for name in sorted({m.partition(".")[0] for m in list(sys.modules)}):
        module = sys.modules.get(name)
        spec = getattr(module, "__spec__", None)
        if name in _OURS or name == "__main__" or spec is None or spec.origin in ("built-in", "frozen") or not (spec.origin or spec.submodule_search_locations):
            continue
        imported[name] = _where(name, sys.path)
    startup = {name: _where(name, _beyond_here(sys.path)) for name in ("sitecustomize", "usercustomize")}
    prefixes = set(INTERPRETER_VARS)
    with open("/proc/self/maps") as maps:
        loaded = {line.split()[-1].rsplit("/", 1)[-1] for line in maps if "/" in line}
    for part, names in LIBRARY_VARS.items():
        if any(part in library for library in loaded):
            prefixes.update(names)
    options = _command(sys.orig_argv)[0]
    gc.collect()
    gc.freeze()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    return {"state": state, "options": options, "startup": startup, "prefixes": sorted(prefixes), "env": own_env, "read": sorted(read), "changed": changed, "modules": imported}


def _serve(folder, name, server, started):
    import select
    import time

    path = os.path.join(folder, f"{name}.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    listener.settimeout(5)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    me, last = os.getpid(), time.monotonic()
    try:
        while True:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                if not os.path.isdir(folder) or time.monotonic() - last > IDLE_SECONDS:
                    return
                continue
            conn.setblocking(True)
            last = time.monotonic()
            while True:
                try:
                    if os.waitpid(-1, os.WNOHANG)[0] == 0:
                        break
                except ChildProcessError:
                    break
            if os.fork() == 0:
                listener.close()
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                request = _handle(conn, server, select)
                _run(request, server["changed"])  # only in the fork that becomes the command line: ends it
            conn.close()
    finally:
        if os.getpid() == me:
            _log_usage(started)
            listener.close()
            try:
                os.unlink(path)
            except OSError:
                pass


def _handle(conn, server, select):
    """In a fork per connection: refuse, or fork the run and report how it ends. Returns only in the run."""
    try:
        request, fds = _recv(conn, with_fds=3)
        reason = "no standard streams" if len(fds) != 3 else _refusal(request, server)
        if reason:
            reason, prefixes = reason if isinstance(reason, tuple) else (reason, None)
            _send(conn, {"refused": reason, **({"prefixes": prefixes} if prefixes else {})})
            os._exit(0)
        pid = os.fork()
        if pid == 0:
            conn.close()
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
                os.close(fd)
            return request
        for fd in fds:
            os.close(fd)
        _send(conn, {"pid": pid})
        pidfd = os.pidfd_open(pid)
        while True:
            ready, _, _ = select.select([conn, pidfd], [], [])
            if pidfd in ready:
                _, status = os.waitpid(pid, 0)
                _send(conn, {"status": status})
                os._exit(0)
            if not conn.recv(64):  # the stand-in is gone
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                os._exit(0)
    except BaseException:
        os._exit(70)


def _run(request, changed):
    import builtins
    import runpy
    import types

    _, mode, target = _command(request["orig_argv"])
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for name, value in changed.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    os.umask(request["umask"])
    for signum in FORWARDED[:4]:
        signal.signal(signum, signal.SIG_IGN if int(signum) in request["ignored"] else (signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL))
    sys.argv = list(request["argv"])
    sys.orig_argv = list(request["orig_argv"])
    sys.path[:] = [_first_path_entry(mode, target, request["cwd"]), *request["path"]]
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    code, interrupted = 0, False
    try:
        if mode == "-m":
            runpy._run_module_as_main(target)
        elif mode == "-c":
            exec(compile(target, "<string>", "exec"), main.__dict__)
        else:
            main.__file__ = target
            main.__cached__ = None
            with open(target, "rb") as fh:
                source = fh.read()
            exec(compile(source, target, "exec"), main.__dict__)
    except SystemExit as exc:
        code = _exit_status(exc)
    except BaseException as exc:  # as the interpreter: the traceback from the command's own frames, status 1
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
            tb = tb.tb_next
        sys.excepthook(type(exc), exc.with_traceback(tb), tb)
        code, interrupted = 1, isinstance(exc, KeyboardInterrupt)
    os._exit(_finalize(code, interrupted))


def _exit_status(exc):
    """The status an uncaught SystemExit gives (printing a non-integer code, as the interpreter does)."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    try:
        print(exc.code, file=sys.stderr)
    except Exception:
        pass
    return 1


def _finalize(code, interrupted):
    """What the interpreter's exit does that can be seen from outside: wait for the threads that are not daemons,
    run the atexit functions, flush every file still open for writing (a real exit flushes them as it frees them),
    and end by SIGINT after an uncaught KeyboardInterrupt. The rest of a real interpreter's teardown (freeing every
    object) is left out: in a fork it would copy every page of the preloaded modules first, over a second of CPU."""
    import atexit
    import gc
    import io
    import threading

    try:
        threading._shutdown()
    except BaseException:
        pass
    atexit._run_exitfuncs()
    for obj in gc.get_objects():
        if isinstance(obj, (io.BufferedWriter, io.BufferedRandom, io.TextIOWrapper)) and obj not in (sys.stdout, sys.stderr):
            try:
                if not obj.closed and obj.writable():
                    obj.flush()
            except Exception:
                pass
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None and not stream.closed:
                stream.flush()
        except Exception:
            if stream is sys.stdout:
                code = 120
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return code
