"""`services.llm_judge.verdicts.check_unparsed`: the share of unparsed judge replies above which a run warns and exits 3
(LMMS_TASKS_UNPARSED_MAX_SHARE, default more than half; always when every reply is unparsed)."""

from __future__ import annotations

import pytest

from lmms_tasks.utils.services import status as run_status
from lmms_tasks.utils.services.llm_judge import verdicts
from lmms_tasks.utils.services.llm_judge.judge import JudgeOutcome


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


# -- issue 43: a parsed score of 0 is a verdict; the share's bounds ---------------------------------------


def _with_zeros(unparsed: int, zero: int, other: int = 0) -> dict[str, JudgeOutcome]:
    """Replies without a verdict, replies whose verdict is 0 (a parsed 0, 0.0), and other parsed verdicts."""
    made = [JudgeOutcome(key=f"u{i}", content=f"prose reply {i}") for i in range(unparsed)]
    made += [JudgeOutcome(key=f"z{i}", content="<score>0/2</score>", parsed=(0, 0.0)[i % 2]) for i in range(zero)]
    made += [JudgeOutcome(key=f"p{i}", content="<score>2/2</score>", parsed=1.0) for i in range(other)]
    return {o.key: o for o in made}


@pytest.mark.parametrize(
    ("unparsed", "zero", "other", "warns"),
    [
        (0, 4, 0, False),  # every reply parsed to 0: a judge that works and a model that fails, not a broken judge
        (1, 3, 0, False),  # 1 of 4 unparsed; counting the zeros too would make it 4 of 4
        (2, 2, 0, False),  # exactly half
        (3, 1, 0, True),
        (4, 0, 0, True),
        (1, 2, 1, False),
    ],
)
def test_a_parsed_zero_is_not_unparsed(unparsed: int, zero: int, other: int, warns: bool) -> None:
    assert verdicts.check_unparsed("t", _with_zeros(unparsed, zero, other)) is warns
    faults = run_status.faults("t")
    assert len(faults) == int(warns)
    if warns:
        assert f"{unparsed} of {unparsed + zero + other} judge replies" in faults[0].message


@pytest.mark.parametrize(("parsed", "failed", "unparsed"), [(0, False, False), (0.0, False, False), (None, False, True), (None, True, False), (1, False, False)])
def test_the_item_verdict_of_a_zero_is_parsed(parsed: object, failed: bool, unparsed: bool) -> None:
    verdict = verdicts.Verdict.of({verdicts.PARSED: parsed, verdicts.FAILED: failed}, "item")
    assert verdict.unparsed is unparsed
    outcome = JudgeOutcome(key="k", content=None if failed else "reply", parsed=None if failed else parsed, error="HTTP 500" if failed else None)
    assert verdicts.verdict_fields(outcome) == {verdicts.PARSED: None if failed else parsed, verdicts.FAILED: failed}


@pytest.mark.parametrize(
    ("raw", "value"),
    [("0", 0.0), ("0.0", 0.0), (" 1 ", 1.0), ("1.0", 1.0), ("0.25", 0.25), ("", 0.5)],
)
def test_every_share_from_0_to_1_is_accepted(raw: str, value: float, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(verdicts.MAX_SHARE_ENV, raw)
    assert verdicts.max_share() == value


@pytest.mark.parametrize("raw", ["-0.01", "-1", "1.01", "2", "nan", "inf", "50%"])
def test_a_share_outside_0_to_1_is_refused(raw: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(verdicts.MAX_SHARE_ENV, raw)
    with pytest.raises(ValueError, match=f"{verdicts.MAX_SHARE_ENV}={raw!r}: expected a share between 0 and 1"):
        verdicts.max_share()


@pytest.mark.parametrize(
    ("raw", "unparsed", "parsed", "warns"),
    [
        ("0", 0, 10, False),  # 0: nothing unparsed is tolerated, and nothing unparsed is fine
        ("0", 1, 9, True),
        ("0.25", 1, 3, False),  # exactly the share: not above
        ("0.25", 2, 2, True),
        ("1", 9, 1, False),  # 1: only when every reply is unparsed
        ("1", 10, 0, True),
    ],
)
def test_the_share_is_compared_strictly_above_the_threshold(raw: str, unparsed: int, parsed: int, warns: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(verdicts.MAX_SHARE_ENV, raw)
    assert verdicts.check_unparsed("t", _outcomes(unparsed=unparsed, parsed=parsed, failed=2)) is warns
    assert len(run_status.faults("t")) == int(warns)
