"""PC-VID judging through the shared judge client against the stand-in server: the official prompt per
type, max_tokens 300, unparseable replies dropped and counted, transport failures dropped and counted."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from lmms_tasks.utils.services.judge import clear_memo
from lmms_tasks.utils.services.prompts import prompt
from lmms_tasks.utils.vlm2_bench import hooks


def _item(index: int, vid: str, response: str) -> dict:
    return {
        "task": "vlm2_bench_pc_vid",
        "subtask": "pc_vid",
        "doc_index": index,
        "q_id": "",
        "gt": "",
        "response": response,
        "vid": vid,
        "type": "ABA" if "ABA" in vid else "AB",
    }


@pytest.fixture
def judge_env(hermetic_env: Path, stand_in, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("LMMS_TASKS_JUDGE_BASE_URL", stand_in.base_url)
    monkeypatch.setenv("LMMS_TASKS_JUDGE_API_KEY", "EMPTY")
    monkeypatch.setenv("LMMS_TASKS_JUDGE_MODEL", "stand-in-judge")
    monkeypatch.setenv("LMMS_TASKS_JUDGE_MAX_RETRIES", "1")
    monkeypatch.setenv("LMMS_TASKS_JUDGE_BACKOFF", "0.01")
    monkeypatch.setenv("LMMS_TASKS_JUDGE_PROGRESS", "0")
    clear_memo()
    yield stand_in
    clear_memo()


def test_vid_metrics_from_judge_replies(judge_env, tmp_path: Path) -> None:
    server = judge_env
    server.script("desc-ab-good", "Score: 1")
    server.script("desc-ab-bad", "Score: 0")
    server.script("desc-ab-garbled", "I think it is fine")  # unparseable: dropped
    server.script("desc-aba-two", "Reasoning first. Score: 2")
    server.script("desc-aba-one", "Score: 1")
    server.fault("desc-aba-down", "500", times=None)  # fails after retries: dropped, counted
    items = [
        _item(0, "v_AB_1", "desc-ab-good"),
        _item(1, "v_AB_2", "desc-ab-bad"),
        _item(2, "v_AB_3", "desc-ab-garbled"),
        _item(3, "v_ABA_1", "desc-aba-two"),
        _item(4, "v_ABA_2", "desc-aba-one"),
        _item(5, "v_ABA_3", "desc-aba-down"),
    ]
    args = SimpleNamespace(output_path=str(tmp_path / "out"))
    # AB: mean(1, 0) = 50%; ABA: mean(2, 1) / 2 = 75%; score (50 + 75) / 2
    assert hooks.agg_vlm2_score(items[::-1], args) == pytest.approx(62.5)
    assert hooks.agg_vid_ab_pct(items, args) == pytest.approx(50.0)
    assert hooks.agg_vid_aba_pct(items, args) == pytest.approx(75.0)
    assert (hooks.agg_vid_n_ab(items, args), hooks.agg_vid_n_aba(items, args)) == (2, 2)
    assert hooks.agg_vid_judge_unparsed(items, args) == 1
    assert hooks.agg_vid_judge_failed(items, args) == 1
    assert hooks.agg_vlm2_exact_score(items, args) == pytest.approx(62.5)  # no exact-match mode for VID
    assert "judge=stand-in-judge" in hooks.agg_vid_judge_info(items, args)

    judged = [r for r in server.requests if r.status == 200]
    assert len(judged) == 5  # one batch shared by every metric (memoized), retries aside
    by_desc = {r.messages[0]["content"].split("#Description\n")[1].strip(): r for r in judged}
    assert by_desc["desc-ab-good"].messages == [
        {"role": "user", "content": prompt("vlm2bench/pc_v_judge/prompt_ab").format(description="desc-ab-good")}
    ]
    assert by_desc["desc-aba-two"].messages[0]["content"] == prompt("vlm2bench/pc_v_judge/prompt_aba").format(description="desc-aba-two")
    assert all(r.params.get("max_tokens") == 300 and "temperature" not in r.params for r in judged)
    assert all(r.model == "stand-in-judge" for r in server.requests)
    assert list((tmp_path / "out" / "judgements").glob("*vlm2_bench_pc_vid*"))
