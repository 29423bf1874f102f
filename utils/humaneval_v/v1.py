"""HumanEval-V v1: the original 108-task release (upstream commit `00d2cf2`, HF data with an `image` field).

What differs from v2 lives here and in `extraction_v1.py`: the data source and its checks, the single
prompt (`CODE_GEN_TASK_PROMPT`, filled with `str.format(signature=...)`), k per task (pass@1 greedy,
pass@10 from 20 samples) and the metric names. The gate, the sandbox, pass@k and the records are v2's,
with v1's result strings (`execution.V1`).
"""

from __future__ import annotations

import datasets

from lmms_tasks.utils.services import schema
from lmms_tasks.utils.services.data import DataError, DataSource, check_split, load_parquet_split
from lmms_tasks.utils.services.logging import logger
from lmms_tasks.utils.services.prompts import prompt, prompt_sha256

# The last HF revision known to hold the 108-task release (its `data/` was last written by the upload
# commit 3c5a0b8; established offline from the Hub's pages, see the README). HUMANEVAL_V1_DATA avoids the
# question: a local copy of that layout (data/test-*.parquet).
SOURCE = DataSource("humaneval_v1", "HumanEval-V/HumanEval-V-Benchmark", "b639103e8e2cd33cfa87ef59825886545a33eef8", "HUMANEVAL_V1_DATA", "HUMANEVAL_V1_REVISION")
EXPECTED_TASKS = 108
PROMPT_KEY = "humanevalv/v1/CODE_GEN_TASK_PROMPT"
SETTING = "v1"
# What the v1 scorer reads of each row (qid, function_signature, test_script; the image for the prompt);
# the other two fields of the v1 card are checked for type only.
FIELDS = [
    schema.Field("qid", schema.text()),
    schema.Field("function_signature", schema.text()),
    schema.Field("test_script", schema.text()),
    schema.Field("ground_truth_solution", schema.text(nonempty=False), required=False),
    schema.Field("image_description", schema.text(nonempty=False), required=False),
]


def build_prompt(function_signature: str) -> str:
    """The v1 user text, byte for byte (the signature's own trailing newline leaves a blank line)."""
    return prompt(PROMPT_KEY).format(signature=function_signature)


def template_sha256() -> str:
    return prompt_sha256(PROMPT_KEY)


def load_documents() -> datasets.Dataset:
    """The v1 test split, every row checked (unique qids, typed fields, readable images) before any request;
    a count other than 108 is warned about (a partial copy is scored over the tasks it holds, as v1 does)."""
    dataset = load_parquet_split(SOURCE, "test")
    columns = dataset.column_names
    if "image" not in columns and "diagram" in columns:
        raise DataError(
            f"{SOURCE.name}: {SOURCE.describe()} holds the v2 release (column 'diagram', {len(dataset)} rows), not v1 "
            f"(column 'image', {EXPECTED_TASKS} tasks): point {SOURCE.env_var} at a copy of the v1 data, or use the humaneval_v tasks"
        )
    check_split(SOURCE, "test", dataset, FIELDS, id_field="qid", image_fields={"image": False})
    if len(dataset) != EXPECTED_TASKS:
        logger.warning(
            f"{SOURCE.name}: {SOURCE.describe()} holds {len(dataset)} unique qids; the v1 release has {EXPECTED_TASKS}. "
            "Scores are over the tasks present and are not comparable with the published v1 numbers."
        )
    guarded = [q for q, t in zip(dataset["qid"], dataset["test_script"]) if "__name__" in t]
    if guarded:  # quirk H7: under exec(program, {}) such a guard skips the tests, which then "pass"
        logger.warning(f"HumanEval-V v1 test scripts mention __name__ (a __main__ guard skips the tests officially): {guarded[:20]}")
    return dataset
