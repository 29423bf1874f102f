"""Runtime services a run uses: the judge client, the code sandbox, data location and load-time checks,
caches, secrets redaction, the benchmark prompt table, task metadata lookup and the fault registry.

Services know nothing of lmms-eval's quirks: they never import version-specific adaptations, a benchmark
library or a command (checked by `tests/foundation/test_layers.py`)."""
