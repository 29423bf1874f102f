"""Shared library for every benchmark (installed as `lmms_tasks.utils`): data location, media loading,
the judge client, the code sandbox, parsers and metrics. Task folders' `utils.py` stay thin and import
from here with absolute imports, because lmms-eval re-executes those files for every `!function` tag."""
