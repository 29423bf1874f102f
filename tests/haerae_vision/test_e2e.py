"""One real `lmms-eval` run of group haerae_vision over the fixtures, with scripted model and judge replies.

Expected scores are worked out by hand below from the scripted judge replies; the stand-in server's log
must show the judge messages byte for byte and the model requests as the official pipeline sends them.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from lmms_tasks.utils.commands.score import rescore
from lmms_tasks.utils.services.llm_judge import judge
from lmms_tasks.utils.testing.e2e import STAND_IN_JUDGE, STAND_IN_MODEL, offline_env, run_lmms_eval
from lmms_tasks.utils.testing.fixtures import haerae_vision as fixture
from lmms_tasks.utils.testing.openai_server import StandInServer

SYSTEM = "You are a helpful math assistant. Answer precisely in Korean if the prompt is Korean."
ITEMS = {item["question_idx"]: item for item in fixture.ITEMS}

# question_idx -> (raw model reply, what the judge must see as the response, judge reply, parsed score)
ORIGINAL = {
    101: (
        "<think>첫 화면을 보면…</think>젤다의 전설 같습니다.",
        "젤다의 전설 같습니다.",
        "<evidence>\nItem 1:\nmet: 1\n</evidence>\n<score>1/3</score>",
        1 / 3,
    ),
    102: ("상자를 밀어 보세요.", "상자를 밀어 보세요.", "<score>\n2.5/4 \n</score>", 0.625),
    103: (
        "<analysis>곤충</analysis>무당벌레예요.",
        "<analysis>곤충</analysis>무당벌레예요.",
        "<score>1/4</score>\n<score>2/4</score>",
        None,
    ),
    104: ("드라이버 문제입니다.", "드라이버 문제입니다.", "<score>3/5 (0.6)</score>", None),
    105: ("", "nan", "<score>0/1</score>", 0.0),
}
EXPLICIT = {
    101: ("젤다의 전설: 왕국의 눈물, 닌텐도 스위치입니다.", "젤다의 전설: 왕국의 눈물, 닌텐도 스위치입니다.", "<score>3/3</score>", 1.0),
    102: ("1. 왼쪽 상자를 민다\n2. 스위치를 밟는다", "1. 왼쪽 상자를 민다\n2. 스위치를 밟는다", "<score>5/4</score>", 1.25),
    103: ("칠성무당벌레이며 해롭지 않습니다.", "칠성무당벌레이며 해롭지 않습니다.", "<score>0.75</score>", 0.75),
    104: ("<thinking>코드 확인</thinking>드라이버를 업데이트하세요.", "드라이버를 업데이트하세요.", "<score>1/2</score>", 0.5),
    105: ("오른쪽 노트북이 낫습니다.", "오른쪽 노트북이 낫습니다.", None, None),  # judge always answers 500
}
# checklists as the official CSV holds them (numpy str of the list), written out by hand
CHECKLISTS = {
    101: "['게임 제목을 정확히 밝힌다' '출시 플랫폼을 언급한다' '근거가 되는 화면 요소를 설명한다']",
    102: "['상자를 미는 순서를 제시한다' '문이 열리는 조건을 설명한다']",
    103: "[\"곤충의 종 이름(예: '무당벌레')을 정확히 밝힌다\" '사람에게 해로운지 여부를 설명한다'\n"
    " '식별 근거가 되는 형태적 특징(날개 무늬, 더듬이 길이, 몸 색깔 등)을 두 가지 이상 제시한다' '대처 방법을 안내한다']",
    104: "['오류 코드의 의미를 설명한다' '해결 방법을 구체적으로 제시한다']",
    105: "['더 적합한 모델을 하나 고른다']",
}


# Fresh process: the two tasks' saved (batch-scored) samples -> their item_scores -> the group's gap and its error.
GROUP_ALONE = """
import json, sys
from pathlib import Path
from lmms_tasks.utils.haerae_vision import hooks
tasks = ["haerae_vision_explicit", "haerae_vision_original"]
items = {t: [json.loads(line)["item_scores"] for line in next(Path(sys.argv[1]).rglob(f"*_samples_{t}.jsonl")).read_text().splitlines()] for t in tasks}
values = [hooks.agg_item_scores(items[t]) for t in tasks]
stderrs = ["N/A", "N/A"]  # the gap's paired error reads the item scores the values are, not these
print(json.dumps([hooks.group_underspec_gap(values, [5, 5], False, subtasks=tasks), hooks.group_underspec_gap.stderr(stderrs, [5, 5], False, subtasks=tasks, values=values)]))
"""


def _se(values: list[float]) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1) / len(values))


def _expected_mean_rgb(index: int, mode: str) -> tuple[int, int, int]:
    image = fixture._image(index, mode).convert("RGB")
    return tuple(image.resize((1, 1), Image.BOX).getpixel((0, 0)))


def _template() -> str:
    import json

    reference = Path(__file__).resolve().parents[3] / "shared" / "reference" / "prompts_exact.json"
    if reference.is_file():
        return json.loads(reference.read_text(encoding="utf-8"))["haerae/judge/prompt_template"]["text"]
    from lmms_tasks.utils.services.prompts import prompt

    return prompt("haerae/judge/prompt_template")


@pytest.mark.e2e
def test_group_run_scores_gap_categories_failures_and_wire_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fixture_set = fixture.write(tmp_path / "data")
    with StandInServer(default_reply=None) as server:
        for variant, table in (("original", ORIGINAL), ("explicit", EXPLICIT)):
            for qid, (model_reply, _, judge_reply, _) in table.items():
                question = ITEMS[qid][f"question_{variant}"]
                stripped = question.strip()
                server.script(lambda r, q=stripped: r.model == STAND_IN_MODEL and q in r.text, model_reply)
                if judge_reply is None:
                    server.fault(lambda r, q=question: r.model == STAND_IN_JUDGE and f"[INPUT]\n{q}\n" in r.text, "500", times=None)
                else:
                    server.script(lambda r, q=question: r.model == STAND_IN_JUDGE and f"[INPUT]\n{q}\n" in r.text, judge_reply)
        env = offline_env(
            server.base_url,
            tmp_path,
            fixture_set.env,
            extra={"LMMS_TASKS_JUDGE_MAX_RETRIES": "1", "LMMS_TASKS_JUDGE_BACKOFF": "0.01", "LMMS_TASKS_JUDGE_PROGRESS": "0"},
        )
        # item 105's judge always fails: the run writes every output, names the item and exits 3 (incomplete)
        run = run_lmms_eval("haerae_vision", server.base_url, tmp_path / "out", env=env, in_process=True).check(exit_status=3)
        assert "lmms-eval: exit status 3" in run.stderr and "judge request(s) failed after retries, the first ('105'): HTTP 500" in run.stderr
        model_requests = server.requests_for(model=STAND_IN_MODEL)
        judge_requests = server.requests_for(model=STAND_IN_JUDGE)
        # `python -m lmms_tasks score` on the saved samples: same numbers, every judgement from the cache
        for key, value in env.items():
            if key.startswith("LMMS_TASKS_JUDGE_"):
                monkeypatch.setenv(key, value)
        judge.clear_memo()
        samples_file = next((tmp_path / "out").rglob("*_samples_haerae_vision_original.jsonl"))
        report = rescore(samples_file, output_dir=tmp_path / "rescored")
        assert report["errors"] == {}
        assert len(server.requests_for(model=STAND_IN_JUDGE)) == len(judge_requests)

    # -- scores, by hand: a reply without a usable score counts 0; the failed request (explicit 105) is left out
    original_scores = [0.0 if s is None else s for *_, s in ORIGINAL.values()]  # 1/3, 0.625, 0, 0, 0
    explicit_scores = [EXPLICIT[q][3] for q in (101, 102, 103, 104)]  # 1, 1.25, 0.75, 0.5 (105: no reply)
    original_mean = sum(original_scores) / 5
    explicit_mean = sum(explicit_scores) / 4
    assert explicit_mean == pytest.approx(0.875)
    assert run.metric("haerae_vision_original", "haerae_vision_score") == pytest.approx(original_mean)
    for task in ("haerae_vision_original", "haerae_vision_explicit"):  # group-only metrics stay on the group row
        assert not {"score_original,none", "score_explicit,none", "underspec_gap,none"} & set(run.results["results"][task])
        assert "judge_info,none" not in run.results["results"][task]
    assert run.metric("haerae_vision_explicit", "haerae_vision_score") == pytest.approx(0.875)
    assert run.metric("haerae_vision_original", "judge_failures") == 0
    assert run.metric("haerae_vision_original", "judge_unparsed") == 2  # 103 two tags, 104 prose in the tag
    assert run.metric("haerae_vision_explicit", "judge_failures") == 1  # 105 transport failure
    assert run.metric("haerae_vision_explicit", "judge_unparsed") == 0
    # standard errors on the 0-1 scale: SD(item scores, ddof=1) / sqrt(n judged), lmms-eval's CLT (the one
    # route: its bootstrap `_stderr` stays N/A for our aggregation)
    assert run.metric("haerae_vision_original", "haerae_vision_score_stderr_clt") == pytest.approx(_se(original_scores))
    assert run.metric("haerae_vision_explicit", "haerae_vision_score_stderr_clt") == pytest.approx(_se(explicit_scores))
    assert run.metric("haerae_vision_original", "haerae_vision_score_stderr") == "N/A"
    # per-category means and the judged items' values: in results.json (dict-valued entries the batch step
    # computed; not in the printed table); the judge's provenance: in the judgement summaries beside it
    categories = {
        "haerae_vision_original": {"IT/컴퓨터": 0.0, "게임": (1 / 3 + 0.625) / 2, "자연물(동식물/곤충)": 0.0},
        "haerae_vision_explicit": {"IT/컴퓨터": 0.5, "게임": (1.0 + 1.25) / 2, "자연물(동식물/곤충)": 0.75},  # IT: 104 only, 105 failed
    }
    for task, expected in categories.items():
        assert run.metric(task, "category_scores") == pytest.approx(expected)
        assert list(run.metric(task, "category_scores")) == sorted(expected)
        assert run.metric(task, "category_scores_stderr_clt") == "N/A"
    assert run.metric("haerae_vision_original", "item_scores") == pytest.approx({str(q): 0.0 if s is None else s for q, (*_, s) in ORIGINAL.items()})
    assert run.metric("haerae_vision_explicit", "item_scores") == pytest.approx({str(q): EXPLICIT[q][3] for q in (101, 102, 103, 104)})  # 105 failed
    printed = "\n".join(line for line in run.stdout.splitlines() if line.startswith("|"))
    assert "|category_scores" not in printed.replace(" ", "") and "|item_scores" not in printed.replace(" ", "") and "게임" not in printed
    summaries = {t: json.loads(next((tmp_path / "out").rglob(f"judgements/{t}.summary.json")).read_text(encoding="utf-8")) for t in categories}
    assert not any("category_scores" in summary for summary in summaries.values())  # one home: the results
    assert "judge=stand-in-judge@127.0.0.1" in summaries["haerae_vision_explicit"]["judge_info"]
    for metric in ("haerae_vision_score", "judge_failures", "judge_unparsed", "haerae_vision_score_stderr_clt", "category_scores", "item_scores"):
        assert report["results"][f"{metric},none"] == pytest.approx(run.metric("haerae_vision_original", metric))

    # -- group: both scores, the gap over the items both variants had judged, the failures ----------------
    pairs = [(EXPLICIT[q][3] or 0.0) - (ORIGINAL[q][3] or 0.0) for q in (101, 102, 103, 104)]
    gap = sum(pairs) / 4
    assert run.metric("haerae_vision", "score_original") == pytest.approx(original_mean)
    assert run.metric("haerae_vision", "score_explicit") == pytest.approx(0.875)
    assert run.metric("haerae_vision", "underspec_gap") == pytest.approx(gap)
    assert run.metric("haerae_vision", "underspec_gap_stderr_clt") == pytest.approx(_se(pairs))  # paired
    assert run.metric("haerae_vision", "score_original_stderr_clt") == pytest.approx(_se(original_scores))
    assert run.metric("haerae_vision", "underspec_gap_stderr") == "N/A"
    assert run.metric("haerae_vision", "judge_failures") == 1
    assert run.metric("haerae_vision", "judge_unparsed") == 2
    # the group aggregation alone, in a fresh process (no task aggregated or judged there): the same gap and
    # paired error, from the values it is handed: the tasks' item_scores, from the saved samples
    alone = subprocess.run(
        [sys.executable, "-c", GROUP_ALONE, str(tmp_path / "out")],
        capture_output=True,
        text=True,
        check=True,
        env=dict({**os.environ, "LMMS_TASKS_JUDGE_BASE_URL": "http://127.0.0.1:9/v1"}),  # nothing may be judged
    )
    gap_alone, stderr_alone = json.loads(alone.stdout.strip().splitlines()[-1])
    assert gap_alone == pytest.approx(gap) and stderr_alone == pytest.approx(_se(pairs))

    # -- the samples carry each judged item's score (lmms-eval's CLT stderr and --baseline read them) ------
    explicit_samples = {s["haerae_vision_score"]["question_idx"]: s for s in run.samples["haerae_vision_explicit"]}
    assert {q: s["haerae_vision_score"].get("haerae_vision_score") for q, s in explicit_samples.items()} == {
        "101": 1.0,
        "102": 1.25,
        "103": 0.75,
        "104": 0.5,
        "105": None,
    }
    assert explicit_samples["102"]["unit_score"] == pytest.approx(0.0125) and "unit_score" not in explicit_samples["105"]

    # -- judge messages, byte for byte ---------------------------------------------------------------
    template = _template()
    expected_messages = set()
    for variant, table in (("original", ORIGINAL), ("explicit", EXPLICIT)):
        for qid, (_, judged_response, _, _) in table.items():
            question = ITEMS[qid][f"question_{variant}"]
            expected_messages.add(
                template + "[INPUT]\n" + question + "\n[Response]\n" + judged_response + "\n[Checklist]\n" + CHECKLISTS[qid] + "\n"
            )
    sent = [r.messages for r in judge_requests]
    assert all(len(m) == 1 and m[0]["role"] == "user" and isinstance(m[0]["content"], str) for m in sent)
    assert {m[0]["content"] for m in sent} == expected_messages
    assert len([r for r in judge_requests if r.status == 200]) == 9  # each item judged once (105 explicit failed twice)
    assert all(set(r.params) <= {"stream"} for r in judge_requests)  # official: no request parameters

    # -- model requests: system prompt, text, then the images in dataset order -----------------------
    assert len(model_requests) == 10
    modes = fixture.image_modes()
    for request in model_requests:
        item = next(i for i in fixture.ITEMS if i["question_original"].strip() in request.text or i["question_explicit"] in request.text)
        variant = "original" if item["question_original"].strip() in request.text else "explicit"
        assert request.roles == ["system", "user"]
        assert request.parts()[0] == ("system", SYSTEM)
        assert request.parts()[1] == ("user", item[f"question_{variant}"].strip())
        assert request.part_types() == ["text", "text"] + ["image_url"] * len(item["images"])
        got = [img.mean_rgb for img in request.images]
        want = [_expected_mean_rgb(index, modes[index]) for index, _ in item["images"]]
        assert all(abs(g - w) <= 2 for gs, ws in zip(got, want) for g, w in zip(gs, ws)), (got, want)
        assert request.params["temperature"] == pytest.approx(0.2)
        assert request.params["top_p"] == pytest.approx(0.95)
        assert request.params["max_tokens"] == 512

    # -- samples carry what `python -m lmms_tasks score` needs; judgement records are written -----------
    samples = run.samples["haerae_vision_original"]
    assert {s["haerae_vision_score"]["question_idx"] for s in samples} == {str(q) for q in ITEMS}
    assert all(s["haerae_vision_score"]["task"] == "haerae_vision_original" for s in samples)
    records = list((tmp_path / "out").rglob("judgements/haerae_vision_explicit.jsonl"))
    assert len(records) == 1 and len(records[0].read_text(encoding="utf-8").splitlines()) == 5
