"""Export our tasks into an lmms-eval checkout, ready for a pull request (`python -m lmms_tasks export-upstream`).

Modules: `sources` (where our modules are and where they go), `pyrewrite` (import discovery and
rewriting), `yamlexport` (self-contained YAML), `style` (the checkout's formatters), `catalog`
(current_tasks.md), `writer` (manifest, idempotence, refusal), `exporter` (the plan), `cli`.
"""

from __future__ import annotations

from lmms_tasks.utils.commands.upstream.cli import main

__all__ = ["main"]
