"""An opt-in tally of the test suite's expensive operations, for measuring where its time goes.

With `LMMS_TASKS_TEST_OPS_LOG=/path/to/file` set, each lmms-eval command a test runs (`e2e.run_command`), each
tiny-model build, each demo, each export-upstream stack build, each patched lmms-eval copy and each pytest that
a test starts in an exported checkout appends one line `kind<TAB>detail<TAB>pid<TAB>seconds` to that file (one
`write` in append mode, so the lines of pytest-xdist's workers do not interleave). Unset, nothing is written.
`python -m lmms_tasks.utils.testing.oplog FILE` prints the counts and seconds per kind.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections import Counter
from collections.abc import Iterator

OPS_LOG_ENV = "LMMS_TASKS_TEST_OPS_LOG"


@contextlib.contextmanager
def op(kind: str, detail: str = "") -> Iterator[None]:
    """Time one expensive operation and append it to the ops log, if one is asked for."""
    path = os.environ.get(OPS_LOG_ENV)
    started = time.monotonic()
    try:
        yield
    finally:
        if path:
            line = f"{kind}\t{' '.join(detail.split())[:300]}\t{os.getpid()}\t{time.monotonic() - started:.1f}\n"
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line.encode("utf-8"))
            finally:
                os.close(fd)


def summary(path: str) -> str:
    counts: Counter[str] = Counter()
    seconds: Counter[str] = Counter()
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            kind, _, _, spent = line.rstrip("\n").split("\t")
            counts[kind] += 1
            seconds[kind] += float(spent)
    return "\n".join(f"{kind:24} {counts[kind]:5d} × {seconds[kind]:8.1f} s" for kind in sorted(counts))


if __name__ == "__main__":
    print(summary(sys.argv[1]))
