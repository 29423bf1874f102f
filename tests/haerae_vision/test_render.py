"""Checklist and cell rendering against the official CSV round trip, reproduced here by the real chain:
`datasets.Dataset.to_pandas()` -> `DataFrame.to_csv` -> `pd.read_csv` -> `str(cell)` (the oracle)."""

from __future__ import annotations

import io

import datasets
import numpy as np
import pandas as pd
import pytest

from lmms_tasks.utils.haerae_vision.render import ChecklistError, csv_cell, numpy_list_str, render_checklist

LISTS = [
    ["제목을 정확히 밝힌다", "플랫폼을 언급한다"],
    ["곤충의 종 이름(예: '무당벌레')을 정확히 밝힌다", '그는 "안녕"이라고 말한다', "짧음"],
    ["항목 하나"],
    [],
    ["식별 근거가 되는 형태적 특징(날개 무늬, 더듬이 길이, 몸 색깔 등)을 두 가지 이상 제시한다"] * 3,
    ["첫 줄\n둘째 줄", "탭\t포함", "백슬래시 \\ 포함"],
    ["a" * 30, "b" * 30, "c" * 30, "d" * 30],
]


def _official_cells(column: list, feature: datasets.features.features.FeatureType) -> list[str]:
    """str() of each checklist cell after the official to_pandas -> to_csv -> read_csv chain."""
    ds = datasets.Dataset.from_dict(
        {"checklist": column, "question": ["질문"] * len(column)},
        features=datasets.Features({"checklist": feature, "question": datasets.Value("string")}),
    )
    buffer = io.StringIO()
    ds.to_pandas().to_csv(buffer, index=False)
    buffer.seek(0)
    return [str(v) for v in pd.read_csv(buffer)["checklist"]]


def test_list_checklist_matches_official_round_trip() -> None:
    expected = _official_cells(LISTS, datasets.Sequence(datasets.Value("string")))
    got = [csv_cell(render_checklist(items)) for items in LISTS]
    assert got == expected


def test_string_checklist_matches_official_round_trip() -> None:
    strings = ["1. 제목을 밝힌다\n2) 플랫폼을 언급한다", '["JSON 배열", "형식"]', "None", ""]
    expected = _official_cells(strings, datasets.Value("string"))
    got = [csv_cell(render_checklist(s)) for s in strings]
    assert got == expected
    assert got[-2:] == ["nan", "nan"]  # pandas reads "None" and an empty field as missing


def test_numpy_rendering_hand_checked() -> None:
    # single quotes, space separated, no commas; a quote inside switches that item to double quotes
    assert numpy_list_str(["제목을 밝힌다", "플랫폼을 언급한다"]) == "['제목을 밝힌다' '플랫폼을 언급한다']"
    assert numpy_list_str(["it's"]) == '["it\'s"]'
    assert numpy_list_str([]) == "[]"
    # numpy wraps at 75 characters, continuation lines indented by one space
    wrapped = numpy_list_str(["a" * 30, "b" * 30, "c" * 30])
    assert wrapped == "['" + "a" * 30 + "' '" + "b" * 30 + "'\n '" + "c" * 30 + "']"


def test_rendering_ignores_the_process_print_options() -> None:
    items = ["a" * 30, "b" * 30, "c" * 30]
    with np.printoptions(linewidth=1000, threshold=1):
        assert "\n" in numpy_list_str(items)


def test_numpy_array_input_is_accepted_as_a_list() -> None:
    assert render_checklist(np.array(["하나", "둘"], dtype=object)) == "['하나' '둘']"


@pytest.mark.parametrize("value", [[1, 2], {"a": 1}, 3.5])
def test_bad_checklist_raises_naming_the_item(value: object) -> None:
    with pytest.raises(ChecklistError, match="question_idx=7"):
        render_checklist(value, where="question_idx=7")


@pytest.mark.parametrize(
    "text,expected",
    [
        ("", "nan"),  # K2: an empty response reaches the judge as nan
        ("None", "nan"),
        ("NA", "nan"),
        ("null", "nan"),
        ("nan", "nan"),
        ("N/A", "nan"),
        ("없음", "없음"),
        ("42", "42"),  # a textual column keeps numbers as written
        ("0.50", "0.50"),
        ("줄 하나\n줄 둘", "줄 하나\n줄 둘"),
        ('따옴표 "인용" 포함, 쉼표', '따옴표 "인용" 포함, 쉼표'),
        ("  앞뒤 공백  ", "  앞뒤 공백  "),
    ],
)
def test_csv_cell(text: str, expected: str) -> None:
    assert csv_cell(text) == expected


def test_csv_cell_matches_a_whole_response_column_round_trip() -> None:
    responses = ["", "None", "정답은 젤다입니다.", "42", "줄 하나\r\n줄 둘", 'a "b" c', "  x  "]
    buffer = io.StringIO()
    pd.DataFrame({"response": responses, "question_used": ["질문"] * len(responses)}).to_csv(buffer, index=False)
    buffer.seek(0)
    expected = [str(v) for v in pd.read_csv(buffer)["response"]]
    assert [csv_cell(r) for r in responses] == expected
