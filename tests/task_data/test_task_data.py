"""The shared task-data service on its own (exported with its pull request): record checks name the record and
field at fault, the prompt table refuses an edited entry, the standard error is lmms-eval's CLT form, and the
model-argument check reads only vLLM's command lines."""

from __future__ import annotations

import math

import pytest

from lmms_tasks.utils.services import prompts, schema, stats
from lmms_tasks.utils.services.model_args import model_args_warnings

FIELDS = (schema.Field("id", schema.identifier), schema.Field("question", schema.text()), schema.Field("answer", schema.one_of("A", "B")))


def _records(*rows: dict) -> list[schema.Record]:
    return [schema.Record(f"data.jsonl:{n}", row) for n, row in enumerate(rows, start=1)]


def test_good_records_pass() -> None:
    schema.check_records(
        "bench", _records({"id": "a", "question": "q?", "answer": "A"}, {"id": "b", "question": "r?", "answer": "B"}), FIELDS, "id"
    )


@pytest.mark.parametrize(
    "row, message",
    [
        ({"id": "b", "question": "q?"}, "bench: data.jsonl:2 (id='b'): field 'answer' is missing"),
        ({"id": "b", "question": " ", "answer": "A"}, "bench: data.jsonl:2 (id='b'): field 'question' is empty"),
        ({"id": "b", "question": "q?", "answer": "C"}, "bench: data.jsonl:2 (id='b'): field 'answer'"),
        ({"id": "a", "question": "q?", "answer": "A"}, "bench: data.jsonl:2 (id='a'): field 'id' repeats the id of data.jsonl:1"),
    ],
    ids=["missing", "empty", "not-allowed", "repeated-id"],
)
def test_a_bad_record_is_named_by_file_row_id_and_field(row: dict, message: str) -> None:
    with pytest.raises(schema.SchemaError) as raised:
        schema.check_records("bench", _records({"id": "a", "question": "q?", "answer": "A"}, row), FIELDS, "id")
    assert str(raised.value).startswith(message)


def test_prompts_are_checked_against_their_sha256(monkeypatch: pytest.MonkeyPatch) -> None:
    key = prompts.keys()[0]
    assert prompts.prompt(key)
    entry = dict(prompts._table()[key])
    monkeypatch.setitem(prompts._table(), key, {**entry, "text": entry["text"] + "."})
    with pytest.raises(prompts.PromptIntegrityError, match=entry["sha256"]):
        prompts.prompt(key)


def test_clt_stderr_is_the_sample_sd_over_sqrt_n() -> None:
    assert stats.clt_stderr([1.0]) == stats.NA
    assert math.isclose(stats.clt_stderr([0.0, 1.0, 1.0, 0.0]), math.sqrt(1 / 3) / 2)


def test_model_arguments_are_read_only_for_vllm() -> None:
    """Other backends honour the task's generation limit: nothing to warn about (and no task config is read)."""
    assert model_args_warnings("no_such_task", ["lmms-eval", "--model", "openai", "--model_args", "model_version=m"]) == []
