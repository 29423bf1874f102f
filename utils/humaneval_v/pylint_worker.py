"""Pylint gate worker: `python -B pylint_worker.py`, then one batch directory per stdin line.

Each batch is linted by ONE `pylint.lint.Run` over every `BATCH_DIR/*.py`, with the JSON reporter and
default configuration (an empty rcfile, so no pylintrc, pyproject.toml or ~/.pylintrc of the machine can
change the verdict), and answered on stdout with one JSON line
`{"<file stem>": [messages of type error/fatal except function-redefined], ...}`.

The process stays up between batches, so pylint is imported and astroid's cache of the standard library
warmed once (~8 ms per program instead of ~30 for one Run per file). One Run over many files reports the
same messages per file as one Run per file (each module is checked on its own; tests compare both).
Runs as a script so it imports neither lmms-eval nor this package.
"""

from __future__ import annotations

import glob
import io
import json
import os
import sys


def lint(batch_dir: str) -> dict[str, list[str]]:
    from pylint.lint import Run
    from pylint.reporters import JSONReporter

    files = sorted(glob.glob(os.path.join(batch_dir, "*.py")))
    rcfile = os.path.join(batch_dir, "empty_pylintrc")
    open(rcfile, "w").close()
    buffer = io.StringIO()
    Run([f"--rcfile={rcfile}", "--persistent=n", *files], reporter=JSONReporter(buffer), exit=False)
    errors: dict[str, list[str]] = {os.path.basename(f)[:-3]: [] for f in files}
    for message in json.loads(buffer.getvalue() or "[]"):
        stem = os.path.basename(message.get("path", ""))[:-3]
        if message.get("type") in ("error", "fatal") and message.get("symbol") != "function-redefined":
            errors.setdefault(stem, []).append(message.get("message", ""))
    return errors


def main() -> None:
    out = sys.stdout
    sys.stdout = sys.stderr  # nothing pylint prints may corrupt the answer channel
    for line in sys.stdin:
        batch_dir = line.strip()
        if not batch_dir:
            continue
        try:
            answer = {"ok": True, "errors": lint(batch_dir)}
        except Exception as exc:  # noqa: BLE001 - reported to the caller, which names the batch
            answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        out.write(json.dumps(answer) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
