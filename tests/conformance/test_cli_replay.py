"""Every specified reply case of every benchmark, replayed through the real `lmms-eval` CLI.

The stand-in server answers each record with its case's raw reply (whitespace, `<think>` blocks, empty and
null content, unicode included); one lmms-eval run for every benchmark's cases. For every case the verdict found in the
run's outputs (samples file, execution and judgement records, the judge's request) must equal both the
verdict of the task's hooks called directly on the same reply and the official verdict in the table
(`lmms_tasks.utils.testing.cases`). Whatever lmms-eval does to a response before our hooks (reasoning-tag
stripping, its unconditional `.strip()`) would show up here as a mismatch.

Every replay runs twice: through the stock lmms-eval 0.7.3 (our compat layer backports the patch series'
features) and through a copy with the series applied (compat finds every feature and stays off).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from lmms_tasks.utils import compat
from lmms_tasks.utils.commands.tasks import vlm2_kinds
from lmms_tasks.utils.services.taskconfig import task_config
from lmms_tasks.utils.testing import patched
from lmms_tasks.utils.testing.cases import haerae_vision as hv_cases
from lmms_tasks.utils.testing.cases import humaneval_v as hev_cases
from lmms_tasks.utils.testing.cases import humaneval_v1 as hev1_cases
from lmms_tasks.utils.testing.cases import vlm2_bench as vlm2_cases
from lmms_tasks.utils.testing.e2e import STAND_IN_JUDGE, RunResult, offline_env, run_lmms_eval
from lmms_tasks.utils.testing.openai_server import StandInServer

KINDS = vlm2_kinds()  # each subtask's kind, as its YAML declares it

pytestmark = pytest.mark.e2e


def _records(run: RunResult, kind: str, task: str) -> list[dict[str, Any]]:
    (path,) = run.output_dir.rglob(f"{kind}/{task}.jsonl")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _as_model_gives_it(reply: str | None) -> str:
    """What lmms-eval hands a hook for a reply whose content is null: ""."""
    return "" if reply is None else reply


# Every benchmark's case set: (cases module, its tasks, the extra environment its tasks need).
CASE_SETS: dict[str, tuple[Any, list[str], dict[str, str]]] = {
    "vlm2": (vlm2_cases, [f"vlm2_bench_{s}" for s in vlm2_cases.subtasks()], {}),
    "hev": (hev_cases, ["humaneval_v_v2c", "humaneval_v_v2c_pass3"], {"HUMANEVAL_V_ALLOW_CODE_EXECUTION": "1"}),
    "hev1": (hev1_cases, ["humaneval_v1"], {"HUMANEVAL_V_ALLOW_CODE_EXECUTION": "1"}),
    "hv": (hv_cases, ["haerae_vision"], {}),
}


@pytest.fixture(scope="module", params=["stock", "patched"])
def replay(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """replay(name) -> (run, judge requests, fixtures of that case set): every case set's dataset written and its
    replies scripted on one stand-in server, then one lmms-eval run over the tasks of all of them (one start-up,
    not one per benchmark: the cases tell their records apart by their own markers); the direct hook calls of the
    tests then read the same data and caches (set in this process for the module)."""
    with pytest.MonkeyPatch.context() as patch:
        work = tmp_path_factory.mktemp(f"conformance_{request.param}")
        fixtures = {name: cases.write(work / "data" / name) for name, (cases, _, _) in CASE_SETS.items()}
        data_env = {key: value for found in fixtures.values() for key, value in found.env.items()}
        extra = {key: value for _, _, wanted in CASE_SETS.values() for key, value in wanted.items()}
        with StandInServer(default_reply=None) as server:
            for cases, _, _ in CASE_SETS.values():
                cases.script(server)
            env = offline_env(server.base_url, work, data_env, extra=extra)
            for key in ("HF_HOME", "HF_DATASETS_CACHE", "LMMS_TASKS_EXEC_CACHE_DIR", "LMMS_TASKS_JUDGE_CACHE_DIR", *data_env, *extra):
                patch.setenv(key, env[key])
            if request.param == "patched":
                env = patched.env(request.getfixturevalue("patched_lmms_eval"), env)
            tasks = [task for _, tasks_of, _ in CASE_SETS.values() for task in tasks_of]
            if request.param == "stock":  # lmms-eval's CLI entry in this process, with the backports
                result = run_lmms_eval(tasks, server.base_url, work / "out", env=env, in_process=True).check()
                assert compat.installed()
            else:  # the patched copy first on the path of an lmms-eval command: no backport
                result = run_lmms_eval(tasks, server.base_url, work / "out", env=env).check()
                assert "lmms-tasks compat: backported" not in result.stdout + result.stderr
            judge_requests = [r for r in server.requests if r.model == STAND_IN_JUDGE]
        yield lambda name: (result, judge_requests, fixtures[name])


# -- VLM2-Bench ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def vlm2(replay: Any) -> dict[str, Any]:
    run, judge_requests, fixtures = replay("vlm2")
    from lmms_tasks.utils.vlm2_bench.data import load_docs

    docs = {s: {d["q_id"]: d for d in load_docs(s, fixtures.root, kind=KINDS[s])} for s in vlm2_cases.subtasks() if s != "pc_vid"}
    docs["pc_vid"] = {d["vid"]: d for d in load_docs("pc_vid", fixtures.root, kind=KINDS["pc_vid"])}
    return {"run": run, "docs": docs, "judge_requests": judge_requests}


@pytest.mark.parametrize("case", vlm2_cases.IMAGE_CASES, ids=lambda c: f"{c.subtask}-{c.name}")
def test_vlm2_bench_reply(vlm2: dict[str, Any], case: vlm2_cases.Case) -> None:
    from lmms_tasks.utils.vlm2_bench import hooks

    task = f"vlm2_bench_{case.subtask}"
    (sample,) = [s for s in vlm2["run"].samples[task] if s["vlm2_score"]["q_id"] == case.q_id]
    through_cli = vlm2_cases.verdict(sample["vlm2_score"])
    direct = vlm2_cases.verdict(hooks.process_results(vlm2["docs"][case.subtask][case.q_id], [_as_model_gives_it(case.reply)])["vlm2_score"])
    assert through_cli == direct == case.verdict


@pytest.mark.parametrize("case", vlm2_cases.VID_CASES, ids=lambda c: c.name)
def test_vlm2_bench_video_reply_and_judge(vlm2: dict[str, Any], case: vlm2_cases.VidCase) -> None:
    from lmms_tasks.utils.vlm2_bench import hooks
    from lmms_tasks.utils.vlm2_bench.parsers import parse_judge_score

    run = vlm2["run"]
    (sample,) = [s for s in run.samples["vlm2_bench_pc_vid"] if s["vlm2_score"]["vid"] == case.vid]
    direct_item = hooks.process_results(vlm2["docs"]["pc_vid"][case.vid], [_as_model_gives_it(case.reply)])["vlm2_score"]
    (direct_request,) = hooks.judge_requests([direct_item])
    (sent,) = [r for r in vlm2["judge_requests"] if r.messages == direct_request.messages]  # what the judge really got
    assert sample["vlm2_score"]["response"] == direct_item["response"] == case.description
    assert sent.messages[0]["content"].endswith(f"#Description\n{case.description}\n")
    (record,) = [r for r in _records(run, "judgements", "vlm2_bench_pc_vid") if r["meta"]["vid"] == case.vid]
    assert record["parsed"] == parse_judge_score(case.judge_reply) == case.score


# -- HumanEval-V -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def humaneval_v(replay: Any) -> dict[str, Any]:
    run, _, _ = replay("hev")
    from lmms_tasks.utils.humaneval_v import hooks

    docs = {d["qid"]: d for d in hooks.load_subtask(**task_config("humaneval_v_v2c")["dataset_kwargs"])["test"]}
    direct = {qid: hooks.process_results(doc, [_as_model_gives_it(hev_cases.case_for(qid).reply)])["pass@1"] for qid, doc in docs.items()}
    from lmms_tasks.utils.humaneval_v import metrics

    scored = metrics.score_items(list(direct.values()))
    return {"run": run, "direct": direct, "direct_passed": scored.passed_by_qid}


@pytest.mark.parametrize("case", hev_cases.CASES, ids=lambda c: c.name)
def test_humaneval_v_reply(humaneval_v: dict[str, Any], case: hev_cases.Case) -> None:
    run = humaneval_v["run"]
    raw = _as_model_gives_it(case.reply)
    (greedy,) = [s for s in run.samples["humaneval_v_v2c"] if s["pass@1"]["qid"] == case.name]
    (sampled,) = [s for s in run.samples["humaneval_v_v2c_pass3"] if s["pass@3"]["qid"] == case.name]
    # the hook saw the raw reply: nothing stripped, no reasoning removed
    assert greedy["pass@1"]["predictions"] == [raw] and sampled["pass@3"]["predictions"] == [raw] * 6
    direct = humaneval_v["direct"][case.name]
    assert greedy["pass@1"]["completions"] == direct["completions"] == [case.expected_completion()]
    assert sampled["pass@3"]["completions"] == [case.expected_completion()] * 6
    assert greedy["pass@1"]["programs"] == [case.expected_program()]
    (record,) = [r for r in _records(run, "executions", "humaneval_v_v2c") if r["qid"] == case.name]
    sampled_records = [r for r in _records(run, "executions", "humaneval_v_v2c_pass3") if r["qid"] == case.name]
    assert record["passed"] == humaneval_v["direct_passed"][case.name][0] == case.passed, record["result"]
    assert [r["passed"] for r in sampled_records] == [case.passed] * 6


def test_humaneval_v_scores_follow_the_cases(humaneval_v: dict[str, Any]) -> None:
    run = humaneval_v["run"]
    passed = sum(c.passed for c in hev_cases.CASES)
    assert run.metric("humaneval_v_v2c", "pass@1") == round(100 * passed / len(hev_cases.CASES), 1)
    assert run.metric("humaneval_v_v2c", "pass@1_unrounded") == pytest.approx(100 * passed / len(hev_cases.CASES))
    # six identical samples per task: pass@3 per task is 0 or 1
    assert run.metric("humaneval_v_v2c_pass3", "pass@3", "n6") == round(100 * passed / len(hev_cases.CASES), 1)


# -- HumanEval-V v1 ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def humaneval_v1(replay: Any) -> dict[str, Any]:
    """Every v1 row as the reply of its own task, through `humaneval_v1` (one lmms-eval run): a row's
    expected verdict is the official one on the reply as given (what v1's evaluate.py scores)."""
    run, _, _ = replay("hev1")
    from lmms_tasks.utils.humaneval_v import hooks, metrics

    docs = {d["qid"]: d for d in hooks.load_subtask(**task_config("humaneval_v1")["dataset_kwargs"])["test"]}
    direct = {qid: hooks.process_results(doc, [hev1_cases.case_for(qid).reply])["pass@1"] for qid, doc in docs.items()}
    scored = metrics.score_items(list(direct.values()))
    return {"run": run, "direct": direct, "direct_passed": scored.passed_by_qid, "records": {r["qid"]: r for r in _records(run, "executions", "humaneval_v1")}}


@pytest.mark.parametrize("case", hev1_cases.CASES, ids=lambda c: c.name)
def test_humaneval_v1_reply(humaneval_v1: dict[str, Any], case: hev1_cases.Case) -> None:
    (sample,) = [s for s in humaneval_v1["run"].samples["humaneval_v1"] if s["pass@1"]["qid"] == case.name]
    item, direct, expected = sample["pass@1"], humaneval_v1["direct"][case.name], case.official
    assert item["predictions"] == [case.reply]  # the hook saw the raw reply (nothing stripped by the runner)
    assert item["contains_stop"] == [case.stopped is not None]
    assert item["completions"] == direct["completions"] == [case.marked(expected)]
    assert item["programs"] == [case.program(case.marked(expected), marked=True)]
    record = humaneval_v1["records"][case.name]
    assert hev1_cases.comparable(record["result"], lines=False) == hev1_cases.comparable(case.result_here(expected), lines=False)
    assert record["passed"] == humaneval_v1["direct_passed"][case.name][0] == expected.passed


def test_humaneval_v1_scores_follow_the_cases(humaneval_v1: dict[str, Any]) -> None:
    run, verdicts = humaneval_v1["run"], [c.official for c in hev1_cases.CASES]
    passed, gated, n = sum(v.passed for v in verdicts), sum(v.gated for v in verdicts), len(verdicts)
    assert run.metric("humaneval_v1", "pass@1") == round(100 * passed / n, 1)
    assert run.metric("humaneval_v1", "pass@1_unrounded") == pytest.approx(100 * passed / n)
    assert run.metric("humaneval_v1", "parse_success_rate") == round(100 * (1 - gated / n), 1)
    assert run.metric("humaneval_v1", "parse_success_rate_unrounded") == pytest.approx(100 * (1 - gated / n))


# -- HAERAE-Vision ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def haerae(replay: Any) -> dict[str, Any]:
    run, judge_requests, _ = replay("hv")
    from lmms_tasks.utils.haerae_vision import data

    docs = {variant: {hv_cases.case_name(d["question_used"]): d for d in data.load_docs(variant)} for variant in ("original", "explicit")}
    return {"run": run, "docs": docs, "judge_requests": judge_requests}


@pytest.mark.parametrize("variant", ["original", "explicit"])
@pytest.mark.parametrize("case", hv_cases.RESPONSE_CASES, ids=lambda c: c.name)
def test_haerae_vision_reply(haerae: dict[str, Any], case: hv_cases.ResponseCase, variant: str) -> None:
    from lmms_tasks.utils.haerae_vision import metrics

    task = f"haerae_vision_{variant}"
    (sample,) = [s for s in haerae["run"].samples[task] if hv_cases.case_name(s["haerae_vision_score"]["question_used"]) == case.name]
    item = sample["haerae_vision_score"]
    direct = metrics.process_results(haerae["docs"][variant][case.name], [_as_model_gives_it(case.reply)])["haerae_vision_score"]
    assert item["response"] == direct["response"] == case.response
    (sent,) = [r for r in haerae["judge_requests"] if f"[INPUT]\n{item['question_used']}\n" in r.text]
    assert hv_cases.judged_response(sent.messages[0]["content"]) == case.judged


@pytest.mark.parametrize("case", hv_cases.JUDGE_CASES, ids=lambda c: c.name)
def test_haerae_vision_judge_reply(haerae: dict[str, Any], case: hv_cases.JudgeCase) -> None:
    from lmms_tasks.utils.haerae_vision.judging import parse_score

    name = f"judge_{case.name}"
    for variant in ("original", "explicit"):
        task = f"haerae_vision_{variant}"
        question_idx = str(haerae["docs"][variant][name]["question_idx"])
        (record,) = [r for r in _records(haerae["run"], "judgements", task) if str(r["meta"]["question_idx"]) == question_idx]
        direct = parse_score(case.judge_reply)
        if case.score is None:
            assert record["parsed"] is None and direct is None
        else:
            assert record["parsed"] == pytest.approx(direct, abs=1e-12) and direct == pytest.approx(case.score, abs=1e-12)
