"""The judge the tasks call, built on lmms-eval's `lmms_eval.llm_judge` (its `ServerConfig`, `Request`/`Response`
and `OpenAIProvider`) and adding what it lacks: a disk cache with resume, retries of network errors, 408/409/429
and 5xx only (honouring `Retry-After`), a bounded pool, a preflight check, key redaction and the per-item verdicts.

Each module here is contributed as `lmms_eval/llm_judge/<module>.py` (`export-upstream`); this package's own
`__init__` is not: lmms-eval's `lmms_eval/llm_judge/__init__.py` stays as it is, so nothing imports this package
itself, only its modules (`from lmms_tasks.utils.services.llm_judge import judge`)."""
