"""VLM2-Bench (ACL 2025): data loading, prompts, video frames, answer parsers and the official scorers.

The task folder `lmms_tasks/vlm2_bench/` only holds YAML and thin hooks; everything here is importable
as `lmms_tasks.utils.vlm2_bench.<module>` and is what the tests exercise.

What identifies a subtask and how it is scored is declared in its YAML (`task:`, the `tag:` its family
group lists, the `include:` of its kind's metric template, and `dataset_kwargs`, which lmms-eval hands the
shared loader: `subtask`, `kind` (tf_gc | tf_cpr | cnt | grp | vid: the parser and scorer) and, for PC-Cpr,
`strip_tf_prefix: true` (its official scorer drops a leading "tf_" from q_ids before pairing)); the loader
stamps them into every document, so the hooks read them from the documents and items, never from a name.
What YAML cannot hold is one row of `subtasks.csv` beside this file, the table the commands (export-official,
report), the published numbers and the test fixtures read:

- `subtask`: the name after `vlm2_bench_` (the YAML's `dataset_kwargs.subtask`);
- `family`: gc | oc | pc, which picks the question file (`jsonl/<family>/vanilla/<subtask>.jsonl`), the
  image folder and, for the groups, `vlm2_bench_<family>`;
- `img8`: yes | no, whether paper Table 1 counts the subtask in its image average ("Avg(8 img)", the
  `vlm2_img8_score` group metric);
- `label`: the paper's column header (Table 1);
- `result_folder`, `scorer`: where the official inference scripts write the subtask's answers and the
  official script that scores them (`export-official`);
- one column per row of paper Table 1 (`published.TABLE1`): the subtask's published score, empty where the
  paper has none.

Adding a subtask of an existing kind: its YAML, one row here, one row in the test fixture's spec. The
commands read each subtask's declared kind with `lmms_tasks.utils.commands.tasks.vlm2_declared`.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from importlib import resources

TABLE_FILE = "subtasks.csv"
FAMILIES = ("gc", "oc", "pc")
KINDS = ("tf_gc", "tf_cpr", "cnt", "grp", "vid")
_FIXED = ("subtask", "family", "img8", "label", "result_folder", "scorer")


@dataclass(frozen=True)
class Subtask:
    """One row of the table."""

    name: str
    family: str
    img8: bool  # in paper Table 1's image average
    label: str
    result_folder: str
    scorer: str
    published: dict[str, float | None] = field(default_factory=dict)  # Table 1 row name -> score (None: not published)


def _number(text: str) -> float | None:
    return float(text) if text.strip() else None


def parse_table(text: str, where: str = TABLE_FILE) -> dict[str, Subtask]:
    """The table's rows by subtask name, in file order; `#` lines are comments. Raises ValueError naming the
    line for a row that does not fit (unknown family or kind, a repeated name, a wrong number of cells)."""
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    reader = csv.reader(lines)
    header = next(reader, None)
    if header is None or tuple(header[: len(_FIXED)]) != _FIXED:
        raise ValueError(f"{where}: the header must start with {','.join(_FIXED)}")
    published_columns = header[len(_FIXED) :]
    rows: dict[str, Subtask] = {}
    for number, cells in enumerate(reader, start=2):
        if len(cells) != len(header):
            raise ValueError(f"{where}: row {number} has {len(cells)} cells for {len(header)} columns")
        name, family, img8, label, result_folder, scorer = (c.strip() for c in cells[: len(_FIXED)])
        if family not in FAMILIES or img8 not in ("yes", "no"):
            raise ValueError(f"{where}: row {number} ({name}): family must be one of {FAMILIES} and img8 yes or no")
        if name in rows:
            raise ValueError(f"{where}: row {number}: subtask {name!r} is already declared")
        try:
            scores = {column: _number(cell) for column, cell in zip(published_columns, cells[len(_FIXED) :])}
        except ValueError as exc:
            raise ValueError(f"{where}: row {number} ({name}): {exc}") from None
        rows[name] = Subtask(name, family, img8 == "yes", label, result_folder, scorer, scores)
    return rows


TABLE: dict[str, Subtask] = parse_table(resources.files(__name__).joinpath(TABLE_FILE).read_text(encoding="utf-8"))
PUBLISHED_COLUMNS: tuple[str, ...] = tuple(next(iter(TABLE.values())).published)

# subtask -> family, from the table, in its order (the question file and image folder; the family group)
SUBTASKS: dict[str, str] = {name: row.family for name, row in TABLE.items()}
# the subtasks paper Table 1 averages as "Avg(8 img)"
IMAGE_SUBTASKS: tuple[str, ...] = tuple(name for name, row in TABLE.items() if row.img8)

TASK_PREFIX = "vlm2_bench_"

# Paper Table 1, human row: the overall (9-subtask) mean the "gap to human" is measured against.
HUMAN_OVERALL = 95.16


def task_name(subtask: str) -> str:
    return f"{TASK_PREFIX}{subtask}"
