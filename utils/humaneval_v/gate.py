"""The official pylint gate (pylint==3.3.4, error/fatal messages except function-redefined), batched.

A program with any such message fails without being executed; its result string starts with
"Pylint syntax check failed:" (v1: "pylint fail:") and it counts against `parse_success_rate`. Programs are linted in
batches by one long-lived pylint process (`pylint_worker.py`); verdicts stream back batch by batch so
execution can start while the rest is still being linted (the official harness also lints and executes
concurrently, one program per pool worker). Verdicts are cached by content (pylint version included).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from lmms_tasks.utils.services.cache import DiskCache, content_key

WORKER = Path(__file__).with_name("pylint_worker.py")
PYLINT_FAIL_PREFIX = "Pylint syntax check failed:\n"
PYLINT_FAIL_PREFIX_V1 = "pylint fail:\n"  # v1's evaluate.py (same gate, other wording)
FIRST_BATCH, BATCH_SIZE = 16, 96


class GateError(RuntimeError):
    """The pylint worker itself failed (not a verdict on a program)."""


def pylint_version() -> str:
    from importlib.metadata import version

    return version("pylint")


class PylintWorker:
    """One long-lived `pylint_worker.py` process; `lint(programs)` returns each program's error messages."""

    def __init__(self, python: str = sys.executable) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="lmms_tasks_pylint_")
        self.proc = subprocess.Popen(
            [python, "-B", str(WORKER)],
            cwd=self.tmp.name,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.batches = 0

    def lint(self, programs: Sequence[str]) -> list[list[str]]:
        self.batches += 1
        batch_dir = Path(self.tmp.name, f"b{self.batches:05d}")
        batch_dir.mkdir()
        for index, program in enumerate(programs):
            (batch_dir / f"p{index:05d}.py").write_text(program, encoding="utf-8")
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(str(batch_dir) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except OSError as exc:
            raise GateError(f"pylint worker died while linting {batch_dir}: {exc}") from exc
        answer = json.loads(line) if line.strip() else {"ok": False, "error": f"pylint worker exited with {self.proc.poll()}"}
        if not answer.get("ok"):
            raise GateError(f"pylint worker failed on a batch of {len(programs)} programs ({batch_dir}): {answer.get('error')}")
        return [answer["errors"].get(f"p{index:05d}", []) for index in range(len(programs))]

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.tmp.cleanup()

    def __enter__(self) -> PylintWorker:  # noqa: PYI034
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def iter_pylint_errors(
    programs: Sequence[str],
    *,
    cache_dir: str | None = None,
    python: str = sys.executable,
    first_batch: int = FIRST_BATCH,
    batch_size: int = BATCH_SIZE,
) -> Iterator[tuple[list[int], list[list[str]]]]:
    """Yield (indices, errors per index) as verdicts become known: cache hits first, then each batch."""
    cache = DiskCache(cache_dir) if cache_dir else None
    salt = {"gate": "pylint-json-default", "pylint": pylint_version(), "python": sys.version}
    keys = [content_key({**salt, "program": p}) for p in programs]
    todo: dict[str, list[int]] = {}
    hits: list[int] = []
    hit_errors: list[list[str]] = []
    for index, key in enumerate(keys):
        hit = cache.get(key) if cache is not None else None
        if hit is not None and isinstance(hit.get("errors"), list):
            hits.append(index)
            hit_errors.append(hit["errors"])
        else:
            todo.setdefault(key, []).append(index)
    if hits:
        yield hits, hit_errors
    pending = list(todo.items())
    if not pending:
        return
    with PylintWorker(python) as worker:
        start, size = 0, first_batch
        while start < len(pending):
            batch = pending[start : start + size]
            start, size = start + size, batch_size
            errors = worker.lint([programs[indices[0]] for _, indices in batch])
            out_indices: list[int] = []
            out_errors: list[list[str]] = []
            for (key, indices), found in zip(batch, errors):
                if cache is not None:
                    cache.put(key, {"errors": found})
                out_indices.extend(indices)
                out_errors.extend([found] * len(indices))
            yield out_indices, out_errors


def pylint_errors(
    programs: Sequence[str], *, cache_dir: str | None = None, python: str = sys.executable, batch_size: int = BATCH_SIZE
) -> list[list[str]]:
    """The gate's error messages for each program ([] = the program may run)."""
    result: list[list[str]] = [[] for _ in programs]
    for indices, errors in iter_pylint_errors(programs, cache_dir=cache_dir, python=python, first_batch=batch_size, batch_size=batch_size):
        for index, found in zip(indices, errors):
            result[index] = found
    return result


def gate_message(errors: Sequence[str], prefix: str = PYLINT_FAIL_PREFIX) -> str:
    """The official result string of a gated program (v2's prefix unless told)."""
    return prefix + "\n".join(errors)
