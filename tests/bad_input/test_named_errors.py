"""A task's loader raises a named condition (an error that declares its exit status: bad data, a judge the
run cannot use, the missing code-execution opt-in) as itself, its one line prefixed with the task, so its
type names the problem; anything else becomes a DataError naming the task (issue 39)."""

from __future__ import annotations

import pytest

from lmms_tasks.utils.humaneval_v.execution import CodeExecutionNotAllowed
from lmms_tasks.utils.services.data import DataError, task_loader
from lmms_tasks.utils.services.llm_judge.judge import JudgeUnavailable


def _failing(error: BaseException):  # noqa: ANN202 - a build() that raises
    def build(metadata: dict) -> list:
        raise error

    return build


@pytest.mark.parametrize(
    "error",
    [JudgeUnavailable("the judge j at http://x/v1 has no key"), CodeExecutionNotAllowed("set HUMANEVAL_V_ALLOW_CODE_EXECUTION=1"), DataError("data.parquet row 2: field 'q' is empty")],
    ids=lambda e: type(e).__name__,
)
def test_a_named_condition_is_raised_as_itself_with_the_task(error: BaseException) -> None:
    message = str(error)
    with pytest.raises(type(error)) as info:
        task_loader("some_task", _failing(error))(metadata={})
    assert type(info.value) is type(error) and info.value.exit_status == 1
    assert str(info.value) == f"some_task: {message}"  # the task once, the message unchanged
    assert info.value.__cause__ is None  # no chained traceback behind it


def test_a_named_condition_already_naming_the_task_is_not_prefixed_twice() -> None:
    with pytest.raises(DataError) as info:
        task_loader("t", _failing(DataError("t: row 2 is empty")))(metadata={})
    assert str(info.value) == "t: row 2 is empty"


def test_anything_else_becomes_a_data_error_naming_the_task() -> None:
    with pytest.raises(DataError) as info:
        task_loader("t", _failing(KeyError("question")))(metadata={})
    assert str(info.value) == "t: 'question'" and isinstance(info.value.__cause__, KeyError)
