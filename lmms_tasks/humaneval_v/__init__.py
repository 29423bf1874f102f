# HumanEval-V (arXiv 2410.12381): diagram-to-code, scored by executing the code (opt-in, sandboxed).
# Logic lives in lmms_tasks.utils.humaneval_v; see README.md.
