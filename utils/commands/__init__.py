"""The `python -m lmms_tasks` commands: score, report, export-upstream, media-stats. No task imports them."""
