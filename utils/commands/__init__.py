"""The `python -m lmms_tasks` commands: score, report, export-official, media-stats (installed), and the
upstream exporter `upstream/` (export-upstream: a developer tool, not in the wheel). No task imports them."""
