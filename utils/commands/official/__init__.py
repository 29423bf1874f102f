"""Official formats in and out: `python -m lmms_tasks score --from-official BENCH PATH...` scores the
prediction files each benchmark's own inference scripts write, and `python -m lmms_tasks export-official
RUN_DIR... --out DIR` writes a finished run's samples in those formats, laid out so that the official
scorers run on them unchanged.

Importing goes through exactly the code paths our tasks use: each official record is matched to its
document in the task's real data, the benchmark's own `process_results` turns the official answer text into
the per-document item lmms-eval would have logged, and the task's own aggregations score the items
(`lmms_tasks.utils.commands.score.aggregate`), so the summaries, metric names and exit statuses are those
of `score` on an lmms-eval run.

Modules: `common` (errors, the imported-file record, staging of exports), `vlm2_bench`, `humaneval_v`,
`haerae_vision` (one per benchmark: reading and writing its formats), `cli` (the two commands).
"""

from __future__ import annotations
