"""Offline test infrastructure shared by all benchmarks: the stand-in OpenAI-compatible server, the
fixture generators that write small datasets in each benchmark's real format, and the runner that
drives the real lmms-eval CLI against them. Also used by `python -m lmms_tasks demo`."""
