"""PC-VID judging through the shared judge client against the stand-in server: the official prompt per
type, max_tokens 300, unparseable replies dropped and counted, transport failures dropped and counted."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from lmms_tasks.utils.services.llm_judge.judge import clear_memo
from lmms_tasks.utils.services.prompts import prompt
from lmms_tasks.utils.vlm2_bench import hooks


def _item(index: int, vid: str, response: str) -> dict:
    return {
        "task": "vlm2_bench_pc_vid",
        "subtask": "pc_vid",
        "kind": "vid",
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


def _clt(batch: list[dict], metric: str, score_key: str = "vlm2_score") -> float | str:
    """lmms-eval 0.7.3's `<metric>_stderr_clt` over the batch step's items of `metric`."""
    scores = [r[metric][score_key] for r in batch if score_key in r[metric]]
    if len(scores) < 2:
        return "N/A"
    mean = sum(scores) / len(scores)
    return math.sqrt(sum((v - mean) ** 2 for v in scores) / (len(scores) - 1)) / math.sqrt(len(scores))


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
    # the batch step judges once; every metric's item carries the verdict
    names = ("vlm2_score", "vid_ab_pct", "vid_aba_pct", "vid_n_ab")
    batch = hooks.score_batch([{name: item for name in names} for item in items], args)
    judged_items = [r["vid_n_ab"] for r in batch]
    # AB: mean(1, 0) = 50%; ABA: mean(2, 1) / 2 = 75%; score (50 + 75) / 2
    assert hooks.agg_vlm2_score(judged_items[::-1]) == pytest.approx(62.5)
    assert hooks.agg_vid_ab_pct(judged_items) == pytest.approx(50.0)
    assert hooks.agg_vid_aba_pct(judged_items) == pytest.approx(75.0)
    assert (hooks.agg_vid_n_ab(judged_items), hooks.agg_vid_n_aba(judged_items)) == (2, 2)
    assert hooks.agg_vid_judge_unparsed(judged_items) == 1
    assert hooks.agg_vid_judge_failed(judged_items) == 1
    assert hooks.agg_vlm2_exact_score(judged_items) == pytest.approx(62.5)  # no exact-match mode for VID
    with pytest.raises(ValueError, match="no judge verdict.*process_results_batch"):  # not judged by the batch step
        hooks.agg_vid_ab_pct(items)
    summary = json.loads(
        (next((tmp_path / "out").glob("records_*")) / "judgements" / "vlm2_bench_pc_vid.summary.json").read_text(encoding="utf-8")
    )
    assert summary["judge_info"].startswith("judge=stand-in-judge") and "unparsed=1" in summary["judge_info"]

    # standard errors, by hand. AB percentages [100, 0], ABA [100, 50] (judge 2 -> 100, 1 -> 50)
    se_ab = math.sqrt(((100 - 50) ** 2 + (0 - 50) ** 2) / 1) / math.sqrt(2)  # 50
    se_aba = math.sqrt(((100 - 75) ** 2 + (50 - 75) ** 2) / 1) / math.sqrt(2)  # 25
    # lmms-eval's `<metric>_stderr_clt`: SD (ddof=1) / sqrt(n) over the metric's items carrying the task's
    # score_key (vlm2_score), which the batch step wrote into each metric's own items
    assert _clt(batch, "vid_ab_pct") == pytest.approx(se_ab)
    assert _clt(batch, "vid_aba_pct") == pytest.approx(se_aba)
    assert _clt(batch, "vlm2_score") == pytest.approx(math.sqrt(se_ab**2 + se_aba**2) / 2)
    assert _clt(batch, "vid_n_ab") == "N/A"  # a count: no unit scores
    # per-video units: their plain mean is the score, their CLT the two independent types' combined error
    units = {r["vlm2_score"]["doc_index"]: r["vlm2_score"] for r in batch if "score" in r["vlm2_score"]}
    scale = math.sqrt(4 * 3 / (4 * 2 * 1))  # sqrt(n (n - 1) / (4 n_type (n_type - 1)))
    expected = {0: 62.5 + scale * 50, 1: 62.5 - scale * 50, 3: 62.5 + scale * 25, 4: 62.5 - scale * 25}
    assert {i: u["vlm2_score"] for i, u in units.items()} == pytest.approx(expected)
    assert sum(expected.values()) / 4 == pytest.approx(62.5)
    assert {i: u["pair_id"] for i, u in units.items()} == {0: "v_AB_1", 1: "v_AB_2", 3: "v_ABA_1", 4: "v_ABA_2"}
    assert [r.get("unit_score") for r in batch] == pytest.approx(
        [expected[0] / 100, expected[1] / 100, None, expected[3] / 100, expected[4] / 100, None]
    )
    ab = {r["vid_ab_pct"]["doc_index"]: r["vid_ab_pct"]["vlm2_score"] for r in batch if "vlm2_score" in r["vid_ab_pct"]}
    assert ab == {0: 100.0, 1: 0.0}  # the type's own percentages
    assert all("score" not in r["vid_n_ab"] for r in batch)  # only the headline item carries it

    judged = [r for r in server.requests if r.status == 200]
    assert len(judged) == 5  # one batch, in the batch step, for every metric (retries aside)
    by_desc = {r.messages[0]["content"].split("#Description\n")[1].strip(): r for r in judged}
    assert by_desc["desc-ab-good"].messages == [
        {"role": "user", "content": prompt("vlm2bench/pc_v_judge/prompt_ab").format(description="desc-ab-good")}
    ]
    assert by_desc["desc-aba-two"].messages[0]["content"] == prompt("vlm2bench/pc_v_judge/prompt_aba").format(description="desc-aba-two")
    assert all(r.params.get("max_tokens") == 300 and "temperature" not in r.params for r in judged)
    assert all(r.model == "stand-in-judge" for r in server.requests)
    assert list((next((tmp_path / "out").glob("records_*")) / "judgements").glob("*vlm2_bench_pc_vid*"))


def test_vid_units_are_weighted_so_their_mean_is_the_score_and_a_lone_type_pools(judge_env, tmp_path: Path) -> None:
    server = judge_env
    for name, reply in (("a1", "Score: 1"), ("a2", "Score: 0"), ("a3", "Score: 1"), ("b1", "Score: 1")):
        server.script(f"desc-{name}", reply)
    items = [_item(0, "v_AB_1", "desc-a1"), _item(1, "v_AB_2", "desc-a2"), _item(2, "v_AB_3", "desc-a3"), _item(3, "v_ABA_1", "desc-b1")]
    args = SimpleNamespace(output_path=str(tmp_path / "out"))
    # AB% = 200/3, ABA% = 50 (judge 1 of 2); score = (200/3 + 50) / 2
    score = (200 / 3 + 50) / 2
    batch = hooks.score_batch([{"vlm2_score": item} for item in items], args)
    assert hooks.agg_vlm2_score([r["vlm2_score"] for r in batch]) == pytest.approx(score)
    # weights n / (2 n_type): AB 4 / 6, ABA 4 / 2
    units = [100 * 4 / 6, 0.0, 100 * 4 / 6, 50 * 4 / 2]
    assert sum(units) / 4 == pytest.approx(score)
    assert [r["vlm2_score"]["vlm2_score"] for r in batch] == pytest.approx(units)
    # one ABA video: its type's variance cannot be estimated, the types are pooled (CLT over the units)
    mean = sum(units) / 4
    clt = math.sqrt(sum((u - mean) ** 2 for u in units) / 3) / 2
    assert _clt(batch, "vlm2_score") == pytest.approx(clt)
    # k-samples responses: each video's own type percentage as a 0-1 fraction
    again = hooks.score_batch([{"vlm2_score": item} for item in items], args, repeat=1)
    assert [r["vlm2_score"]["score"] for r in again] == [1.0, 0.0, 1.0, 0.5]
    assert all("unit_score" not in r for r in again)
    assert list((next((tmp_path / "out").glob("records_*")) / "repeats" / "1" / "judgements").glob("vlm2_bench_pc_vid.jsonl"))


def test_unparsed_replies_are_checked_once_not_on_every_repeat(judge_env, tmp_path: Path) -> None:
    """The unparsed-share check (exit 3) belongs to the task's judgement; the k-samples repeats are judged into
    their own folders for the stability metrics and are not checked again (one fault, one warning, per task)."""
    from lmms_tasks.utils.services import status as run_status

    server = judge_env
    for name in ("a1", "a2", "b1"):
        server.script(f"desc-{name}", "I cannot tell.")  # no "Score:": unparsed
    items = [_item(0, "v_AB_1", "desc-a1"), _item(1, "v_AB_2", "desc-a2"), _item(2, "v_ABA_1", "desc-b1")]
    args = SimpleNamespace(output_path=str(tmp_path / "out"))
    run_status.clear()
    try:
        for repeat in (1, 2, 3):
            hooks.score_batch([{"vlm2_score": item} for item in items], args, repeat=repeat)
        assert run_status.faults("vlm2_bench_pc_vid") == []  # the repeats alone: nothing recorded
        hooks.score_batch([{"vlm2_score": item} for item in items], args)
        (fault,) = run_status.faults("vlm2_bench_pc_vid")
        assert fault.code == run_status.EXIT_INCOMPLETE and "3 of 3 judge replies have no usable verdict" in fault.message
        for repeat in (1, 2):
            hooks.score_batch([{"vlm2_score": item} for item in items], args, repeat=repeat)
        assert len(run_status.faults("vlm2_bench_pc_vid")) == 1
    finally:
        run_status.clear()


def test_each_run_keeps_its_own_vid_judgements(judge_env, tmp_path: Path) -> None:
    """Issue 52: two runs of one model into one output path (the second on fewer videos, as with `--limit`):
    each run's PC-VID judgements (and its k-samples repeats') go to the records folder its task config's
    metadata names, beside its results; the second run changes no file of the first."""
    for name in ("one", "two", "three"):
        judge_env.script(f"desc-{name}", "Score: 1")
    items = [_item(0, "v_AB_1", "desc-one"), _item(1, "v_AB_2", "desc-two"), _item(2, "v_ABA_1", "desc-three")]
    out = tmp_path / "results"

    def hashes() -> dict[str, str]:
        return {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.rglob("*")) if p.is_file()}

    configs = [SimpleNamespace(metadata={}), SimpleNamespace(metadata={})]
    for config, docs in zip(configs, (items, items[:2])):  # each lmms-eval run: its own args and task config
        args = SimpleNamespace(output_path=str(out), model_args="model_version=vlm-a")
        hooks.score_batch([{"vlm2_score": item} for item in docs], args, config=config)
        hooks.score_batch([{"vlm2_score": item} for item in docs], args, repeat=1, config=config)
        if config is configs[0]:
            before = hashes()
    first, second = (out / "vlm-a" / config.metadata["records"] for config in configs)
    assert first != second and first.name.startswith("records_") and second.name.startswith("records_")
    for folder, n in ((first, 3), (second, 2)):
        summary = json.loads((folder / "judgements" / "vlm2_bench_pc_vid.summary.json").read_text(encoding="utf-8"))
        assert summary["requests"] == n
        assert len((folder / "repeats" / "1" / "judgements" / "vlm2_bench_pc_vid.jsonl").read_text(encoding="utf-8").splitlines()) == n
    after = hashes()
    assert before and {name: after.get(name) for name in before} == before
    assert not (out / "judgements").exists() and not (out / "vlm-a" / "judgements").exists()
