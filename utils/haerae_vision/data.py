"""HAERAE-Vision documents: the public HF split (pinned) or a local copy, stamped for one question variant.

`process_docs` receives lmms-eval's one-line manifest and returns these documents instead (see
`lmms_tasks.utils.services.data`). Each document gets the columns the later hooks need, because `process_results`
receives no task configuration and no image columns: `hv_task`, `hv_variant`, `question_used` (the
variant's question, as the official `question_used` column) and `checklist_text` (the checklist as the
official CSV holds it, `render.render_checklist`).
"""

from __future__ import annotations

import datasets

from lmms_tasks.utils.haerae_vision import task_name
from lmms_tasks.utils.haerae_vision.render import ChecklistError, render_checklist
from lmms_tasks.utils.services import schema
from lmms_tasks.utils.services.data import DataError, DataSource, check_split, load_parquet_split

# The HF dataset's commit could not be resolved offline when this port was written: this follows "main"
# unless HAERAE_VISION_REVISION names a commit (see the task README); the commit loaded is recorded with every run.
HF_REPO = "HAERAE-HUB/HAERAE-VISION"
HF_REVISION = "main"
SPLIT = "train"  # the only public split (165 items); the card's recorded size (653) is stale
SOURCE = DataSource("haerae_vision", HF_REPO, HF_REVISION, "HAERAE_VISION_DATA", "HAERAE_VISION_REVISION")

# What inference and the judge need of each item (spec 3.1); images are checked as images. The official
# current pipeline loads images with PIL's LOAD_TRUNCATED_IMAGES, so a truncated one is accepted here too.
FIELDS = [
    schema.Field("question_idx", schema.identifier),
    schema.Field("question_original", schema.text()),
    schema.Field("question_explicit", schema.text()),
    schema.Field("category", schema.optional_text),
    schema.Field("checklist", schema.any_of(schema.text(), schema.string_list())),
    schema.Field("answer", schema.optional_text, required=False),
]
STAMPED_COLUMNS = ("hv_task", "hv_variant", "question_used", "checklist_text")


def load_split(source: DataSource = SOURCE) -> datasets.Dataset:
    """The raw public split of `source` (default: `HAERAE_VISION_DATA` when set, else the pinned HF revision);
    every item is checked (ids unique, questions and checklist present, one or more readable images) before
    any request."""
    dataset = load_parquet_split(source, SPLIT)
    check_split(source, SPLIT, dataset, FIELDS, id_field="question_idx", image_fields={"images": True})
    return dataset


def stamp_variant(dataset: datasets.Dataset, variant: str) -> datasets.Dataset:
    """Add the per-variant columns without touching (or decoding) the image column."""
    if f"question_{variant}" not in dataset.column_names:
        raise DataError(f"{task_name(variant)}: the data has no question_{variant} column for its variant {variant!r} (it has {sorted(c for c in dataset.column_names if c.startswith('question_') and c != 'question_idx')})")
    table = dataset.data
    ids = table.column("question_idx").to_pylist()
    questions = table.column(f"question_{variant}").to_pylist()
    checklists = table.column("checklist").to_pylist()
    rendered: list[str] = []
    for row, (qid, checklist) in enumerate(zip(ids, checklists)):
        try:
            rendered.append(render_checklist(checklist, where=f"{SOURCE.describe()} row {row} (question_idx={qid!r})"))
        except ChecklistError as exc:
            raise DataError(str(exc)) from exc
    for column in STAMPED_COLUMNS:
        if column in dataset.column_names:
            dataset = dataset.remove_columns(column)
    name = task_name(variant)
    dataset = dataset.add_column("hv_task", [name] * len(dataset))
    dataset = dataset.add_column("hv_variant", [variant] * len(dataset))
    dataset = dataset.add_column("question_used", questions)
    return dataset.add_column("checklist_text", rendered)


def load_docs(variant: str) -> datasets.Dataset:
    """What `process_docs` returns for the task of this variant."""
    return stamp_variant(load_split(), variant)
