"""The spec's HAERAE quirk list (3.8), one test per quirk, each on Korean text: the ledger that every
quirk K1-K10 is reproduced (or handled as documented in the task README)."""

from __future__ import annotations

import pytest
from PIL import Image

from lmms_tasks.utils.haerae_vision import metrics
from lmms_tasks.utils.haerae_vision.judging import DEFAULT_JUDGE_MODEL, JUDGE_PARAMS, judge_message, parse_score, template
from lmms_tasks.utils.haerae_vision.prompting import build_messages, clean_response
from lmms_tasks.utils.haerae_vision.render import render_checklist
from lmms_tasks.utils.services.llm_judge.judge import JudgeConfig, JudgeRequest, request_payload
from lmms_tasks.utils.services.taskconfig import task_config

QUESTION = "이 벌레 뭐임"
CHECKLIST = ["곤충의 종 이름을 밝힌다", "해로운지 설명한다"]


def test_k1_literal_placeholders_and_block_after_notes() -> None:
    message = judge_message(QUESTION, "무당벌레입니다.", render_checklist(CHECKLIST))
    assert "[Question]\n{{QUESTION}}\n\n[Response]\n{{RESPONSE}}\n\n[Checklist]\n{{CHECKLIST}}  ← JSON array" in message
    assert message.endswith(
        "no extra text.[INPUT]\n이 벌레 뭐임\n[Response]\n무당벌레입니다.\n[Checklist]\n['곤충의 종 이름을 밝힌다' '해로운지 설명한다']\n"
    )


def test_k2_empty_response_reaches_the_judge_as_nan() -> None:
    assert "\n[Response]\nnan\n[Checklist]\n" in judge_message(QUESTION, clean_response(""), render_checklist(CHECKLIST))
    assert "\n[Response]\nnan\n" in judge_message(QUESTION, clean_response("[LMMS_EVAL_REQUEST_FAILED after 5 retries] x"), "[]")


def test_k3_list_checklist_is_numpy_str() -> None:
    assert render_checklist(CHECKLIST) == "['곤충의 종 이름을 밝힌다' '해로운지 설명한다']"


@pytest.mark.parametrize("reply", ["점수는 1/2입니다", "<score>1/2</score><score>1/2</score>", "<score>반</score>"])
def test_k4_unparseable_is_none_and_counts_zero(reply: str) -> None:
    assert parse_score(reply) is None
    scored = metrics.ScoredTask("haerae_vision_original", "original", {"1": None, "2": 1.0}, {"1": "과학", "2": "과학"}, "")
    assert scored.mean() == 0.5 and scored.unparsed == 1 and scored.failures == 0 and scored.category_means() == {"과학": 0.5}


def test_k5_not_clipped() -> None:
    assert parse_score("<evidence>과잉 채점</evidence>\n<score>\n3/2\n</score>") == 1.5


def test_k6_text_before_images_and_math_system_prompt_for_every_category() -> None:
    doc = {"question_idx": 1, "category": "엔터테인먼트/예술", "question_used": QUESTION, "images": [Image.new("RGB", (4, 4))] * 2}
    messages = build_messages(doc)
    assert "math assistant" in messages[0]["content"][0]["text"]
    assert [p["type"] for p in messages[1]["content"]] == ["text", "image", "image"]


def test_k7_reasoning_stripped_by_the_official_rule_for_every_model() -> None:
    assert clean_response("<think>곤충 모양 분석</think>\n무당벌레입니다.") == "무당벌레입니다."
    assert task_config("haerae_vision_original")["reasoning_tags"] == "none"  # lmms-eval's different rule is off


def test_k8_generation_parameters() -> None:
    kwargs = task_config("haerae_vision_explicit")["generation_kwargs"]
    assert (kwargs["temperature"], kwargs["top_p"], kwargs["max_new_tokens"]) == (0.2, 0.95, 512)


def test_k9_judge_runs_at_api_defaults() -> None:
    config = JudgeConfig.resolve(default_model=DEFAULT_JUDGE_MODEL, defaults=JUDGE_PARAMS, env={})
    assert config.model == "gpt-5-mini"
    payload = request_payload(config, JudgeRequest(key="1", messages=[{"role": "user", "content": "채점"}], params=dict(JUDGE_PARAMS)))
    assert set(payload) == {"model", "messages"}  # no temperature, no token limit, no system prompt


def test_k10_judge_sees_the_variant_the_model_saw() -> None:
    explicit = "사진 속 곤충의 종 이름과 사람에게 해로운지 알려주세요."
    item = metrics.process_results(
        {
            "hv_task": "haerae_vision_explicit",
            "hv_variant": "explicit",
            "question_idx": 3,
            "category": "자연물(동식물/곤충)",
            "question_used": explicit,
            "checklist_text": "['a']",
        },
        ["칠성무당벌레입니다."],
    )["haerae_vision_score"]
    assert judge_message(item["question_used"], item["response"], item["checklist_text"]).startswith(template() + f"[INPUT]\n{explicit}\n")
