"""An opt-in tally of the test suite's expensive operations, for measuring where its time goes.

With `LMMS_TASKS_TEST_OPS_LOG=/path/to/file` set, each lmms-eval command a test runs (`e2e.run_command`), each
tiny-model build, each demo, each export-upstream stack build, each patched lmms-eval copy and each pytest that
a test starts in an exported checkout appends one line `kind<TAB>detail<TAB>pid<TAB>seconds<TAB>child CPU seconds<TAB>test`
to that file (one `write` in append mode, so the lines of pytest-xdist's workers do not interleave): the CPU seconds
its finished child processes used (less noisy than the wall clock on a loaded machine) and the test it ran for.
Unset, nothing is written. `python -m lmms_tasks.utils.testing.oplog FILE` prints the counts and seconds per kind
(older four-column logs too).
"""

from __future__ import annotations

import contextlib
import os
import resource
import sys
import time
from collections import Counter
from collections.abc import Iterator

OPS_LOG_ENV = "LMMS_TASKS_TEST_OPS_LOG"


@contextlib.contextmanager
def op(kind: str, detail: str = "") -> Iterator[None]:
    """Time one expensive operation and append it to the ops log, if one is asked for."""
    path = os.environ.get(OPS_LOG_ENV)
    started, cpu = time.monotonic(), _children_cpu()
    try:
        yield
    finally:
        if path:
            test = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]
            line = f"{kind}\t{' '.join(detail.split())[:300]}\t{os.getpid()}\t{time.monotonic() - started:.1f}\t{_children_cpu() - cpu:.1f}\t{test}\n"
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line.encode("utf-8"))
            finally:
                os.close(fd)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def summary(path: str) -> str:
    counts: Counter[str] = Counter()
    seconds: Counter[str] = Counter()
    cpu: Counter[str] = Counter()
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            fields = line.rstrip("\n").split("\t")
            kind, spent = fields[0], fields[3]
            counts[kind] += 1
            seconds[kind] += float(spent)
            cpu[kind] += float(fields[4]) if len(fields) > 4 else 0.0
    return "\n".join(f"{kind:24} {counts[kind]:5d} × {seconds[kind]:8.1f} s  (child CPU {cpu[kind]:8.1f} s)" for kind in sorted(counts))


if __name__ == "__main__":
    print(summary(sys.argv[1]))
