"""HumanEval-V (v2, 253 diagram-to-code tasks): prompts, official post-processing, the pylint gate,
sandboxed execution, unbiased pass@k and the lmms-eval hooks. The task folder's `utils.py` re-exports
the hooks from `lmms_tasks.utils.humaneval_v.hooks`."""
