"""The pylint gate: official verdicts (error/fatal except function-redefined), batching changes nothing."""

from __future__ import annotations

from pathlib import Path

from lmms_tasks.utils.humaneval_v.extraction import post_process
from lmms_tasks.utils.humaneval_v.gate import PYLINT_FAIL_PREFIX, gate_message, pylint_errors, pylint_version

SIG = 'def solution(a: int) -> int:\n    """doc"""\n'
TEST = "assert solution(1) == 2\n"

PROGRAMS = {
    "ok": post_process("```python\ndef solution(a: int) -> int:\n    return a + 1\n```", SIG, TEST)[1],
    # H4: a dropped top-level constant -> undefined-variable (an E message) -> gated
    "constant_dropped": post_process("```python\nK = 1\ndef solution(a: int) -> int:\n    return a + K\n```", SIG, TEST)[1],
    # syntax error kept raw -> syntax-error
    "syntax": post_process("```python\ndef solution(a)\n    return a\n```", SIG, TEST)[1],
    # H6: a missing module is an E message too
    "import_error": post_process(
        "```python\nimport surely_not_installed_mod\ndef solution(a: int) -> int:\n    return a + 1\n```", SIG, TEST
    )[1],
    # warnings/conventions only (unused import, bad names) do not gate
    "warnings_only": post_process("```python\nimport os\ndef solution(a: int) -> int:\n    X = a\n    return X + 1\n```", SIG, TEST)[1],
}


def test_pinned_pylint() -> None:
    assert pylint_version() == "3.3.4"


def test_verdicts(tmp_path: Path) -> None:
    errors = dict(zip(PROGRAMS, pylint_errors(list(PROGRAMS.values()), cache_dir=str(tmp_path))))
    assert errors["ok"] == [] and errors["warnings_only"] == []  # the stub redefinition is ignored
    assert errors["constant_dropped"] == ["Undefined variable 'K'"]
    assert len(errors["syntax"]) == 1 and errors["syntax"][0].startswith("Parsing failed:")
    assert errors["import_error"] == ["Unable to import 'surely_not_installed_mod'"]
    assert gate_message(errors["constant_dropped"]) == PYLINT_FAIL_PREFIX + "Undefined variable 'K'"


def test_batched_equals_one_run_per_file(tmp_path: Path) -> None:
    programs = list(PROGRAMS.values())
    batched = pylint_errors(programs, batch_size=len(programs))
    single = [pylint_errors([p], batch_size=1)[0] for p in programs]
    normalise = lambda msgs: [m.split("(p0")[0] for m in msgs]
    assert [normalise(m) for m in batched] == [normalise(m) for m in single]


def test_cache_is_used(tmp_path: Path) -> None:
    pylint_errors([PROGRAMS["constant_dropped"]], cache_dir=str(tmp_path))
    entries = list(tmp_path.rglob("*.json"))
    assert len(entries) == 1
    entries[0].write_text('{"errors": ["from the cache"]}')
    assert pylint_errors([PROGRAMS["constant_dropped"]], cache_dir=str(tmp_path)) == [["from the cache"]]


def test_fatal_messages_gate_too(tmp_path: Path) -> None:
    # a 3,000-term expression makes astroid give up: pylint reports it as type "fatal" (astroid-error),
    # which the official gate counts like an error
    program = post_process("```python\ndef solution(a: int) -> int:\n    return a" + " + 1" * 3000 + "\n```", SIG, TEST)[1]
    (errors,) = pylint_errors([program], cache_dir=str(tmp_path))
    assert len(errors) == 1 and "Fatal error while checking" in errors[0], errors
