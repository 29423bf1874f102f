"""Loading the public split from a local copy in the real HF parquet format, and per-variant stamping."""

from __future__ import annotations

from pathlib import Path

import datasets
import pytest

from lmms_tasks.utils.haerae_vision import data
from lmms_tasks.utils.services.data import DataError
from lmms_tasks.utils.testing.fixtures import haerae_vision as fixture


@pytest.fixture
def fixture_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    fixture_set = fixture.write(tmp_path / "hv")
    for key, value in fixture_set.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf_datasets"))
    return tmp_path / "hv"


def test_pinned_source_is_one_constant() -> None:
    assert data.SOURCE.repo_id == "HAERAE-HUB/HAERAE-VISION"
    assert data.SOURCE.revision == data.HF_REVISION
    assert data.SOURCE.env_var == "HAERAE_VISION_DATA"
    assert data.SPLIT == "train"


@pytest.mark.parametrize("variant", ["original", "explicit"])
def test_docs_are_stamped_for_the_variant(fixture_root: Path, variant: str) -> None:
    docs = data.load_docs(variant)
    assert len(docs) == len(fixture.ITEMS)
    assert isinstance(docs.features["images"], (datasets.Sequence, datasets.List))
    first = docs[0]
    assert first["hv_task"] == f"haerae_vision_{variant}"
    assert first["hv_variant"] == variant
    assert first["question_used"] == fixture.ITEMS[0][f"question_{variant}"]
    assert first["checklist_text"] == "['게임 제목을 정확히 밝힌다' '출시 플랫폼을 언급한다' '근거가 되는 화면 요소를 설명한다']"
    assert [len(d["images"]) for d in docs] == [len(item["images"]) for item in fixture.ITEMS]
    assert docs[1]["question_used"] == fixture.ITEMS[1][f"question_{variant}"]  # unstripped in the data


def test_string_checklist_feature(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fixture_set = fixture.write(tmp_path / "hv", checklist_as="str")
    monkeypatch.setenv("HAERAE_VISION_DATA", fixture_set.env["HAERAE_VISION_DATA"])
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf_datasets"))
    docs = data.load_docs("original")
    assert docs[0]["checklist_text"] == "1. 게임 제목을 정확히 밝힌다\n2. 출시 플랫폼을 언급한다\n3. 근거가 되는 화면 요소를 설명한다"


def test_missing_column_names_the_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    items = [{k: v for k, v in item.items()} for item in fixture.ITEMS[:2]]
    fixture.write(tmp_path / "hv", items=items)
    shard = tmp_path / "hv" / "data" / "train-00000-of-00001.parquet"
    datasets.Dataset.from_parquet(str(shard), cache_dir=str(tmp_path / "c")).remove_columns("checklist").to_parquet(
        str(tmp_path / "x.parquet")
    )
    shard.unlink()
    (tmp_path / "x.parquet").rename(shard)
    monkeypatch.setenv("HAERAE_VISION_DATA", str(tmp_path / "hv"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf_datasets"))
    with pytest.raises(DataError, match=r"HAERAE_VISION_DATA=.*checklist"):
        data.load_docs("original")


def test_duplicate_question_idx_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    items = [dict(fixture.ITEMS[0]), dict(fixture.ITEMS[1], question_idx=fixture.ITEMS[0]["question_idx"])]
    fixture.write(tmp_path / "hv", items=items)
    monkeypatch.setenv("HAERAE_VISION_DATA", str(tmp_path / "hv"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf_datasets"))
    with pytest.raises(DataError, match=r"train-00000-of-00001\.parquet row 1 \(question_idx=101\): field 'question_idx' repeats the id of .* row 0"):
        data.load_docs("explicit")


def test_empty_question_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    items = [dict(fixture.ITEMS[0], question_explicit="  ")]
    fixture.write(tmp_path / "hv", items=items)
    monkeypatch.setenv("HAERAE_VISION_DATA", str(tmp_path / "hv"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf_datasets"))
    for variant in ("original", "explicit"):  # the data is refused whichever variant is evaluated
        with pytest.raises(DataError, match=r"row 0 \(question_idx=101\): field 'question_explicit' is empty"):
            data.load_docs(variant)


def test_unknown_variant() -> None:
    """A variant is a question_<variant> column of the data: one the data lacks is named."""
    with pytest.raises(DataError, match="haerae_vision_implicit: the data has no question_implicit column"):
        data.stamp_variant(datasets.Dataset.from_dict({"question_idx": [1]}), "implicit")
