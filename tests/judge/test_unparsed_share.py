"""`services.verdicts.check_unparsed`: the share of unparsed judge replies above which a run warns and exits 3
(LMMS_TASKS_UNPARSED_MAX_SHARE, default more than half; always when every reply is unparsed)."""

from __future__ import annotations

import pytest

from lmms_tasks.utils.services import status as run_status
from lmms_tasks.utils.services import verdicts
from lmms_tasks.utils.services.judge import JudgeOutcome


def _outcomes(unparsed: int, parsed: int, failed: int = 0) -> dict[str, JudgeOutcome]:
    made = [JudgeOutcome(key=f"u{i}", content=f"prose reply {i}") for i in range(unparsed)]
    made += [JudgeOutcome(key=f"p{i}", content="<score>1</score>", parsed=1.0) for i in range(parsed)]
    made += [JudgeOutcome(key=f"f{i}", error="HTTP 500") for i in range(failed)]
    return {o.key: o for o in made}


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(verdicts.MAX_SHARE_ENV, raising=False)
    run_status.clear()
    yield
    run_status.clear()


def test_default_threshold_is_more_than_half() -> None:
    assert verdicts.max_share() == 0.5
    assert not verdicts.check_unparsed("t", _outcomes(unparsed=2, parsed=2))  # exactly half: no warning
    assert run_status.faults() == []
    assert verdicts.check_unparsed("t", _outcomes(unparsed=3, parsed=2, failed=5))  # 3 of the 5 replies (failures are no reply)
    (fault,) = run_status.faults("t")
    assert fault.code == run_status.EXIT_INCOMPLETE and "3 of 5 judge replies" in fault.message
    assert "'prose reply 0'; 'prose reply 1'" in fault.message and "prose reply 2" not in fault.message


def test_the_variable_sets_the_threshold_and_all_unparsed_always_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(verdicts.MAX_SHARE_ENV, "0.8")
    assert not verdicts.check_unparsed("t", _outcomes(unparsed=4, parsed=1))  # 0.8: not above
    monkeypatch.setenv(verdicts.MAX_SHARE_ENV, "1")
    assert verdicts.check_unparsed("t", _outcomes(unparsed=3, parsed=0))  # every reply unparsed
    assert not verdicts.check_unparsed("t", _outcomes(unparsed=0, parsed=0, failed=3))  # no reply at all: the failures say it
    monkeypatch.setenv(verdicts.MAX_SHARE_ENV, "half")
    with pytest.raises(ValueError, match="LMMS_TASKS_UNPARSED_MAX_SHARE='half'"):
        verdicts.max_share()
