"""process_results items and the aggregation step, run in-process against the stand-in judge.

Expected numbers are computed by hand from the scripted judge replies: a reply without a usable score counts
0 in the mean, a judge request that failed after its retries is left out (never averaged as a 0), per-category
means follow the same rules, and the gap pairs items both variants had judged by question_idx.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from lmms_tasks.utils.haerae_vision import hooks, metrics
from lmms_tasks.utils.haerae_vision.judging import template
from lmms_tasks.utils.services.data import DataError
from lmms_tasks.utils.services.llm_judge import judge
from lmms_tasks.utils.testing.openai_server import StandInServer

JUDGE = "stand-in-judge"


def _doc(qid: int, category: str, question: str, variant: str = "original", checklist: str = "['항목 1' '항목 2']") -> dict[str, Any]:
    return {
        "hv_task": f"haerae_vision_{variant}",
        "hv_variant": variant,
        "question_idx": qid,
        "category": category,
        "question_used": question,
        "checklist_text": checklist,
    }


@pytest.fixture
def judge_env(stand_in: StandInServer, hermetic_env: Path, monkeypatch: pytest.MonkeyPatch) -> StandInServer:
    monkeypatch.setenv("LMMS_TASKS_JUDGE_BASE_URL", stand_in.base_url)
    monkeypatch.setenv("LMMS_TASKS_JUDGE_API_KEY", "EMPTY")
    monkeypatch.setenv("LMMS_TASKS_JUDGE_MODEL", JUDGE)
    monkeypatch.setenv("LMMS_TASKS_JUDGE_MAX_RETRIES", "1")
    monkeypatch.setenv("LMMS_TASKS_JUDGE_BACKOFF", "0.01")
    monkeypatch.setenv("LMMS_TASKS_JUDGE_PROGRESS", "0")
    judge.clear_memo()
    yield stand_in
    judge.clear_memo()


def _items(variant: str, rows: list[tuple[int, str, str, str]]) -> list[dict[str, Any]]:
    """Items as process_results makes them, after the samples-file JSON round trip."""
    out = []
    for qid, category, question, response in rows:
        result = metrics.process_results(_doc(qid, category, question, variant), [response])
        assert set(result) == set(metrics.METRICS)
        out.append(json.loads(json.dumps(result["haerae_vision_score"], ensure_ascii=False)))
    return out


ORIGINAL = [
    (1, "게임", "이거 무슨 게임?", "<think>음</think>젤다입니다."),
    (2, "게임", "어떻게 깨요?", "상자를 민다."),
    (3, "과학", "이거 왜 이래요?", ""),
    (4, "과학", "이 현상 뭐임?", "모르겠어요."),
]
EXPLICIT = [
    (1, "게임", "첫 화면의 게임 제목은?", "젤다의 전설입니다."),
    (2, "게임", "퍼즐 방 해법을 단계별로?", "1. 왼쪽 상자 2. 스위치"),
    (3, "과학", "물이 끓는 온도가 낮은 이유는?", "기압이 낮기 때문입니다."),
    (4, "과학", "사진 속 현상의 이름은?", "무지개입니다."),
]


def _judged(items: list[dict[str, Any]], args: Any = None) -> dict[str, list[dict[str, Any]]]:
    """The batch step (the one place the task is judged) on the items: each metric's judged items."""
    documents = hooks.score_batch([{name: item for name in metrics.METRICS} for item in items], args=args)
    return {name: [d[name] for d in documents] for name in metrics.METRICS}


def _clt(items: list[dict[str, Any]]) -> float | str:
    """lmms-eval 0.7.3's `haerae_vision_score_stderr_clt`: SD (ddof=1) / sqrt(n) over the items carrying the
    task's score_key, which the batch step wrote (the one standard-error route)."""
    scores = [i["haerae_vision_score"] for i in items if "haerae_vision_score" in i]
    if len(scores) < 2:
        return "N/A"
    mean = sum(scores) / len(scores)
    return math.sqrt(sum((v - mean) ** 2 for v in scores) / (len(scores) - 1)) / math.sqrt(len(scores))


def _script(server: StandInServer, replies: dict[str, str]) -> None:
    for question, reply in replies.items():
        server.script(lambda r, q=question: r.model == JUDGE and f"[INPUT]\n{q}\n" in r.text, reply)


def test_process_results_item_is_json_friendly_and_cleaned() -> None:
    result = metrics.process_results(_doc(9, "수학", "질문"), ["<think>생각</think> 답 "])
    item = result["haerae_vision_score"]
    assert all(result[name] is item for name in metrics.METRICS if name not in metrics.BREAKDOWNS)
    # the breakdown metrics' items (category_scores, item_scores) carry the ids only: the samples file keeps
    # one copy of the judge inputs per document, not five
    assert all(result[name] == {f: item[f] for f in ("task", "variant", "question_idx", "category")} for name in metrics.BREAKDOWNS)
    assert item == {
        "task": "haerae_vision_original",
        "variant": "original",
        "question_idx": "9",
        "category": "수학",
        "question_used": "질문",
        "checklist_text": "['항목 1' '항목 2']",
        "response": "답",
    }
    assert json.loads(json.dumps(item)) == item


def test_task_aggregation_by_hand(judge_env: StandInServer, tmp_path: Path) -> None:
    _script(
        judge_env,
        {
            "이거 무슨 게임?": "<evidence>...</evidence>\n<score>\n1/2 \n</score>",
            "어떻게 깨요?": "<score>2/2</score>",
            "이거 왜 이래요?": "<score>0/2</score>",
            "이 현상 뭐임?": "<score>1/2</score> 다시 보니 <score>2/2</score>",  # two tags -> None -> 0
        },
    )
    items = _items("original", ORIGINAL)
    args = SimpleNamespace(output_path=str(tmp_path / "out"))
    judged = _judged(items, args)
    assert hooks.agg_haerae_vision_score(judged["haerae_vision_score"]) == pytest.approx((0.5 + 1.0 + 0.0 + 0.0) / 4)
    assert hooks.agg_judge_failures(judged["judge_failures"]) == 0  # every request got a reply
    assert hooks.agg_judge_unparsed(judged["judge_unparsed"]) == 1  # two tags: counted 0
    # SD(0.5, 1, 0, 0) / sqrt(4), on the 0-1 scale
    mean = 0.375
    se = math.sqrt(sum((v - mean) ** 2 for v in (0.5, 1.0, 0.0, 0.0)) / 3) / 2
    assert _clt(judged["haerae_vision_score"]) == pytest.approx(se)
    assert not hasattr(hooks.agg_haerae_vision_score, "stderr")  # one route: lmms-eval's CLT
    # per-category means and the judged items' values are results (dict-valued metrics) computed by the batch
    # step; the judge's provenance is in the judgement summary, which holds no category table
    assert hooks.agg_category_scores(judged["category_scores"]) == pytest.approx({"게임": 0.75, "과학": 0.0})
    assert hooks.agg_item_scores(judged["item_scores"]) == pytest.approx({"1": 0.5, "2": 1.0, "3": 0.0, "4": 0.0})
    summary = json.loads((next((tmp_path / "out").glob("records_*")) / "judgements" / "haerae_vision_original.summary.json").read_text(encoding="utf-8"))
    assert "category_scores" not in summary
    info = summary["judge_info"]
    assert f"judge={JUDGE}@127.0.0.1" in info and "prompt_sha256=2151c923be1b" in info and "unparsed=1" in info
    # the batch step: every judged item carries its score (the CLT stderr over them is the one above)
    documents = hooks.score_batch([{name: item for name in metrics.METRICS} for item in items], args=args)
    assert [d["haerae_vision_score"]["haerae_vision_score"] for d in documents] == pytest.approx([0.5, 1.0, 0.0, 0.0])
    assert [d["unit_score"] for d in documents] == pytest.approx([0.005, 0.01, 0.0, 0.0])  # / 100: --baseline reports x100
    assert all("score" not in d["judge_failures"] for d in documents)
    # four metrics, two batch steps (this one from the judge cache): every item sent to the judge exactly once
    assert len(judge_env.requests_for(model=JUDGE)) == 4
    # the exact bytes of one judge message, by hand; the empty response went out as nan (K2)
    sent = {r.messages[0]["content"] for r in judge_env.requests_for(model=JUDGE)}
    assert template() + "[INPUT]\n이거 왜 이래요?\n[Response]\nnan\n[Checklist]\n['항목 1' '항목 2']\n" in sent
    assert template() + "[INPUT]\n이거 무슨 게임?\n[Response]\n젤다입니다.\n[Checklist]\n['항목 1' '항목 2']\n" in sent
    assert all(len(r.messages) == 1 and r.messages[0]["role"] == "user" for r in judge_env.requests_for(model=JUDGE))
    # the records file sits under the output path
    records = (next((tmp_path / "out").glob("records_*")) / "judgements" / "haerae_vision_original.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(records) == 4


def test_a_failed_judgement_is_left_out_and_counted(judge_env: StandInServer, tmp_path: Path) -> None:
    _script(judge_env, {"이거 무슨 게임?": "<score>1/2</score>", "어떻게 깨요?": "<score>1/1</score>", "이거 왜 이래요?": "<score>0/1</score>"})
    judge_env.fault(lambda r: "어떻게 깨요?" in r.text, "500", times=None)
    judged = _judged(_items("original", ORIGINAL[:3]))
    items = judged["haerae_vision_score"]
    assert hooks.agg_haerae_vision_score(items) == pytest.approx((0.5 + 0.0) / 2)  # over the 2 judged items, not 3
    assert hooks.agg_judge_failures(judged["judge_failures"]) == 1 and hooks.agg_judge_unparsed(judged["judge_unparsed"]) == 0
    assert _clt(items) == pytest.approx(math.sqrt(2 * 0.25**2) / math.sqrt(2))
    assert ["score" in i for i in items] == [True, False, True]  # the failed one: none
    # every request failed: no number at all rather than a 0
    judge.clear_memo()
    judge_env.fault(lambda r: True, "500", times=None)
    assert hooks.agg_haerae_vision_score(_judged(_items("original", ORIGINAL[3:]))["haerae_vision_score"]) is None


def test_items_arrive_unordered_and_duplicated_identically(judge_env: StandInServer) -> None:
    _script(judge_env, {"이거 무슨 게임?": "<score>1/4</score>", "어떻게 깨요?": "<score>3/4</score>"})
    items = _judged(_items("original", ORIGINAL[:2]))["haerae_vision_score"]
    assert hooks.agg_haerae_vision_score(list(reversed(items)) + [items[0]]) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="no judge verdict.*process_results_batch"):  # not judged by the batch step
        hooks.agg_haerae_vision_score(_items("original", ORIGINAL[:2]))


def test_bad_items_are_named() -> None:
    good = _items("original", ORIGINAL[:1])[0]
    with pytest.raises(metrics.ItemError, match="question_idx='1'.*lacks field"):
        metrics.scored_task([{k: v for k, v in good.items() if k != "response"}])
    with pytest.raises(metrics.ItemError, match="two different results"):
        metrics.scored_task([good, dict(good, response="다른 답")])
    with pytest.raises(metrics.ItemError, match="two tasks"):
        metrics.scored_task([good, dict(good, task="haerae_vision_explicit", question_idx="2")])
    with pytest.raises(metrics.ItemError, match="no items"):
        metrics.scored_task([])


def test_group_gap_pairs_by_question_idx(judge_env: StandInServer) -> None:
    _script(
        judge_env,
        {
            "이거 무슨 게임?": "<score>1/2</score>",
            "어떻게 깨요?": "<score>2/2</score>",
            "이거 왜 이래요?": "<score>0/2</score>",
            "이 현상 뭐임?": "없음",
            "첫 화면의 게임 제목은?": "<score>2/2</score>",
            "퍼즐 방 해법을 단계별로?": "<score>5/4</score>",  # K5: not clipped
            "물이 끓는 온도가 낮은 이유는?": "<score>0.5</score>",
            "사진 속 현상의 이름은?": "<score>1/2</score>",
        },
    )
    # lmms-eval hands the group the tasks' values: their scores, and their item_scores for the gap
    original = _judged(_items("original", ORIGINAL))
    explicit = _judged(_items("explicit", list(reversed(EXPLICIT))))
    original_items, explicit_items = original["haerae_vision_score"], explicit["haerae_vision_score"]
    score_original = hooks.agg_haerae_vision_score(original_items)
    score_explicit = hooks.agg_haerae_vision_score(explicit_items)
    expected_gap = ((1.0 - 0.5) + (1.25 - 1.0) + (0.5 - 0.0) + (0.5 - 0.0)) / 4
    tasks = ["haerae_vision_explicit", "haerae_vision_original"]
    values = [score_explicit, score_original]
    item_values = [hooks.agg_item_scores(explicit["item_scores"]), hooks.agg_item_scores(original["item_scores"])]
    assert hooks.group_underspec_gap(item_values, [4, 4], False, subtasks=tasks) == pytest.approx(expected_gap)
    assert hooks.group_underspec_gap(item_values[::-1], [4, 4], False, subtasks=tasks[::-1]) == pytest.approx(expected_gap)
    assert json.loads(json.dumps(item_values)) == item_values  # as results.json holds them
    assert hooks.group_original_score(values, [4, 4], False, subtasks=tasks) == pytest.approx(0.375)
    assert hooks.group_explicit_score(values, [4, 4], False, subtasks=tasks) == pytest.approx(score_explicit)
    # the gap's paired standard error: SD of the per-item differences (0.5, 0.25, 0.5, 0.5) / sqrt(4)
    diffs = [0.5, 0.25, 0.5, 0.5]
    mean = sum(diffs) / 4
    paired = math.sqrt(sum((d - mean) ** 2 for d in diffs) / 3) / 2
    # the group's `.stderr` gets the tasks' `_stderr_clt` and, declaring `values`, their item_scores
    stderrs = [_clt(explicit_items), _clt(original_items)]
    assert hooks.group_underspec_gap.stderr(["N/A", "N/A"], [4, 4], False, subtasks=tasks, values=item_values) == pytest.approx(paired)
    assert hooks.group_underspec_gap.stderr(stderrs, [4, 4], False, subtasks=tasks, values=[0.5, 0.7]) == "N/A"  # no items: none made up
    assert hooks.group_original_score.stderr(stderrs, [4, 4], False, subtasks=tasks) == stderrs[1]  # the original task's own
    assert hooks.group_explicit_score.stderr(stderrs, [4, 4], False, subtasks=tasks) == stderrs[0]
    # plain numbers (no item scores): no gap, never a made-up one
    assert hooks.group_underspec_gap([0.5, 0.7], [4, 4], False, subtasks=tasks) is None


@pytest.mark.parametrize("third", [None, "formal"])
def test_a_third_variant_leaves_the_original_explicit_gap_unchanged(third: str | None) -> None:
    """A variant added by a third YAML (issue 54): a run with it, and a run without it, give the same
    original-vs-explicit gap, by hand: (1.0 - 0.5) and (0.25 - 0.75) over questions 1 and 2 -> 0.0;
    question 3 is judged in one variant only and is left out."""
    original, explicit = {"1": 0.5, "2": 0.75, "3": 1.0}, {"1": 1.0, "2": 0.25}
    tasks, values = ["haerae_vision_original", "haerae_vision_explicit"], [original, explicit]
    if third is not None:
        tasks.insert(1, f"haerae_vision_{third}")
        values.insert(1, {"1": 0.0, "2": 0.0, "3": 0.0})
    sizes = [3] * len(tasks)
    assert hooks.group_underspec_gap(values, sizes, False, subtasks=tasks) == pytest.approx(((1.0 - 0.5) + (0.25 - 0.75)) / 2)
    assert hooks.group_underspec_gap.stderr(["N/A"] * len(tasks), sizes, False, subtasks=tasks, values=values) == pytest.approx(
        math.sqrt(((0.5 - 0.0) ** 2 + (-0.5 - 0.0) ** 2) / 1) / math.sqrt(2)
    )


@pytest.mark.parametrize("task,variant", [("haerae_vision_original", "original"), ("haerae_vision_explicit", "explicit")])
def test_each_task_asks_the_questions_of_the_variant_its_yaml_declares(task: str, variant: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lmms_tasks.utils.services.status import INSPECTING
    from lmms_tasks.utils.services.taskconfig import task_config
    from lmms_tasks.utils.testing.fixtures import haerae_vision as hv_fixture

    fixtures = hv_fixture.write(tmp_path / "data")
    for key, value in fixtures.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    docs = list(hooks.load_subtask(metadata={INSPECTING: True}, **task_config(task)["dataset_kwargs"])["test"])
    assert docs and {(d["hv_task"], d["hv_variant"]) for d in docs} == {(task, variant)}
    assert all(d["question_used"] == d[f"question_{variant}"] for d in docs)
    assert any(d["question_original"] != d["question_explicit"] for d in docs)  # the variants differ in the data


def test_a_variant_is_a_question_column_of_the_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The variant a YAML declares reads its question_<variant> column: one the data lacks is named."""
    from lmms_tasks.utils.testing.fixtures import haerae_vision as hv_fixture

    for key, value in hv_fixture.write(tmp_path / "data").env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    with pytest.raises(DataError, match="haerae_vision_formal: .*no question_formal column"):
        hooks.load_subtask(metadata={"version": 0.1, "judge": {"preflight": False}}, variant="formal")


def _scored(variant: str, scores: dict[str, float]) -> dict[str, float]:
    return metrics.ScoredTask(task=f"haerae_vision_{variant}", variant=variant, scores=scores, categories={q: "" for q in scores}, judge_info="").item_scores()


def test_gap_uses_only_shared_items_and_needs_both_variants() -> None:
    original = _scored("original", {"1": 0.5, "2": 1.0, "3": 0.0})
    explicit = _scored("explicit", {"2": 1.0, "3": 1.0, "4": 1.0})
    assert metrics.paired_gap({"original": original, "explicit": explicit}) == pytest.approx(((1.0 - 1.0) + (1.0 - 0.0)) / 2)
    # an item whose judge request failed in either variant is not paired; an unparsed reply (None) counts 0
    failed = metrics.ScoredTask("haerae_vision_original", "original", {"1": 0.5, "2": 1.0, "3": None}, {}, "", failed=frozenset({"2"})).item_scores()
    assert metrics.paired_gap({"original": failed, "explicit": explicit}) == pytest.approx(1.0 - 0.0)  # item 3 only
    with pytest.raises(ValueError, match="missing \\['explicit'\\]"):
        metrics.paired_gap({"original": original})
    with pytest.raises(ValueError, match="share no question_idx"):
        metrics.paired_gap({"original": _scored("original", {"1": 0.0}), "explicit": _scored("explicit", {"2": 0.0})})
    # the group callable runs after the whole run: it reports None instead of discarding the results
    only_original = [original, 0.7]
    assert hooks.group_underspec_gap(only_original, [3, 3], False, subtasks=["haerae_vision_original", "haerae_vision_explicit"]) is None


def test_group_sum() -> None:
    assert hooks.group_sum([2, 1], [5, 5], False, subtasks=["a", "b"]) == 3


def test_bad_judge_setting_stops_the_loader_before_inference(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from lmms_tasks import tasks_path

    spec = importlib.util.spec_from_file_location("utils", Path(tasks_path()) / "haerae_vision" / "utils.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    monkeypatch.setenv("LMMS_TASKS_JUDGE_CONCURRENCY", "많이")
    monkeypatch.setenv("HAERAE_VISION_DATA", "/nonexistent")  # never reached
    with pytest.raises(DataError, match="haerae_vision_original: .*LMMS_TASKS_JUDGE_CONCURRENCY") as stopped:
        hooks.load_subtask(metadata={"version": 0.1}, variant="original")  # as lmms-eval calls the template's custom_dataset
    assert isinstance(stopped.value.__cause__, judge.JudgeConfigError)


# -- issue 43: category means over judged items only; a missing category stays empty ----------------------------

# question_idx -> (category, verdict): a number (parsed), None (a reply without a usable score: counts 0), or
# "failed" (no reply after the retries: left out, never a 0). Expected means by hand.
CATEGORY_ITEMS = {
    "1": ("게임", 0.5),
    "2": ("게임", "failed"),
    "3": ("게임", None),
    "4": ("과학", "failed"),  # every item of 과학 failed: no mean at all (not 0.0)
    "5": ("과학", "failed"),
    "6": ("음식 문화", 1.0),
    "7": ("음식 문화", 0.0),  # a parsed 0 counts as 0, like an unparsed reply; neither is left out
    "8": ("", 1.0),  # no category in the data
}
CATEGORY_MEANS = {"": 1.0, "게임": 0.25, "음식 문화": 0.5}


def _verdict_item(qid: str, category: str, verdict: object) -> dict[str, Any]:
    from lmms_tasks.utils.services.llm_judge.verdicts import FAILED, PARSED

    item = metrics.process_results(_doc(int(qid), category, f"질문 {qid}"), ["답"])["haerae_vision_score"]
    return {**item, PARSED: None if verdict == "failed" else verdict, FAILED: verdict == "failed"}


def _batch_scored(items: list[dict[str, Any]]) -> tuple[metrics.ScoredTask, list[dict[str, Any]]]:
    """What the batch step computes from judged items (`ScoredTask`) and the items as it writes them
    (`metrics.batch_fields`), after the samples-file JSON round trip."""
    from lmms_tasks.utils.services.llm_judge.verdicts import FAILED, PARSED

    scored = metrics.ScoredTask(
        task=items[0]["task"],
        variant=items[0]["variant"],
        scores={i["question_idx"]: None if i[FAILED] or i[PARSED] is None else float(i[PARSED]) for i in items},
        categories={i["question_idx"]: i["category"] for i in items},
        judge_info="",
        failed=frozenset(i["question_idx"] for i in items if i[FAILED]),
    )
    verdicts = {i["question_idx"]: {PARSED: i[PARSED], FAILED: i[FAILED]} for i in items}
    fields = metrics.batch_fields(scored, verdicts)
    return scored, json.loads(json.dumps([{**i, **fields[i["question_idx"]]} for i in items], ensure_ascii=False))


def test_category_means_leave_out_failed_items_and_all_failed_categories() -> None:
    items = [_verdict_item(q, c, v) for q, (c, v) in CATEGORY_ITEMS.items()]
    for order in (items, items[::-1]):
        scored, written = _batch_scored(order)
        assert scored.category_means() == pytest.approx(CATEGORY_MEANS)
        assert "과학" not in scored.category_means()
        assert scored.failures == 3 and scored.unparsed == 1
        assert scored.mean() == pytest.approx((0.5 + 0.0 + 1.0 + 0.0 + 1.0) / 5)
        # the aggregations read what the batch step wrote: the same numbers
        assert hooks.agg_category_scores(written) == pytest.approx(CATEGORY_MEANS) and list(hooks.agg_category_scores(written)) == sorted(CATEGORY_MEANS)
        assert hooks.agg_judge_failures(written) == 3 and hooks.agg_judge_unparsed(written) == 1
        assert hooks.agg_haerae_vision_score(written) == scored.mean()
        assert hooks.agg_item_scores(written) == scored.item_scores()


@pytest.mark.parametrize(("doc_category", "expected"), [(None, ""), ("", ""), ("게임", "게임"), ("None", "None")])
def test_a_missing_category_is_empty_not_the_text_none(doc_category: str | None, expected: str) -> None:
    doc = _doc(3, "x", "질문")
    doc["category"] = doc_category
    without = {k: v for k, v in doc.items() if k != "category"}
    for given in ([doc] if doc_category is not None else [doc, without]):
        item = metrics.process_results(given, ["답"])["haerae_vision_score"]
        assert item["category"] == expected
        scored, written = _batch_scored([_verdict_item_from(item, 1.0)])
        assert scored.category_means() == {expected: 1.0} == hooks.agg_category_scores(written)


def _verdict_item_from(item: dict[str, Any], verdict: float) -> dict[str, Any]:
    from lmms_tasks.utils.services.llm_judge.verdicts import FAILED, PARSED

    return {**item, PARSED: verdict, FAILED: False}


def test_unparsed_replies_are_checked_once_not_on_every_repeat(judge_env: StandInServer, tmp_path: Path) -> None:
    """As for PC-VID: the unparsed-share check (exit 3) belongs to the task's judgement, not to the k-samples
    repeats judged for the stability metrics (issue 43)."""
    from lmms_tasks.utils.services import status as run_status

    _script(judge_env, {question: "채점할 수 없습니다." for _, _, question, _ in ORIGINAL})  # no <score> tag: unparsed
    items = _items("original", ORIGINAL)
    args = SimpleNamespace(output_path=str(tmp_path / "out"))
    run_status.clear()
    try:
        for repeat in (1, 2):
            hooks.score_batch([{name: item for name in metrics.METRICS} for item in items], args=args, repeat=repeat)
        assert run_status.faults("haerae_vision_original") == []
        _judged(items, args)
        (fault,) = run_status.faults("haerae_vision_original")
        assert fault.code == run_status.EXIT_INCOMPLETE and "4 of 4 judge replies have no usable verdict" in fault.message
    finally:
        run_status.clear()
