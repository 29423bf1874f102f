"""The entries we add to lmms-eval's hand-maintained `docs/advanced/current_tasks.md`.

Format (the file's own): `- [Name](paper link) (task_name)`, placed in the section of the benchmark's
modality. Our three benchmarks are described in `KNOWN`; any other benchmark folder is described from
its README (first `# ` heading and first arXiv link). We only ever insert or remove our own lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from lmms_tasks.utils.commands.upstream.sources import ExportError

CATALOG_PATH = "docs/advanced/current_tasks.md"
FALLBACK_SECTION = "## Additional Tasks"
NEW_FILE_HEADER = "# Current Tasks\n\n> () indicates the task name in lmms_eval. The task name is used to specify the dataset in the configuration file.\n"

# benchmark folder -> (display name, paper link, section heading of current_tasks.md it belongs to)
KNOWN: dict[str, tuple[str, str, str]] = {
    "vlm2_bench": ("VLM2-Bench", "https://arxiv.org/abs/2502.12084", "## 2. Multi-image Tasks"),
    "humaneval_v": ("HumanEval-V", "https://arxiv.org/abs/2410.12381", "### Specialized Vision Tasks"),
    "haerae_vision": ("HAERAE-Vision", "https://arxiv.org/abs/2601.06165", "### Multilingual Benchmarks"),
}


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    link: str
    section: str
    task_names: tuple[str, ...]

    def line(self) -> str:
        return f"- [{self.name}]({self.link}) ({', '.join(self.task_names)})"


def describe(benchmark: str, readme: Path | None, task_names: list[str]) -> CatalogEntry:
    """The catalog entry of one benchmark folder (see the module docstring)."""
    if benchmark in KNOWN:
        name, link, section = KNOWN[benchmark]
        return CatalogEntry(name, link, section, tuple(task_names))
    text = readme.read_text(encoding="utf-8") if readme and readme.is_file() else ""
    title = re.search(r"^#\s+(.+?)\s*$", text, re.MULTILINE)
    link = re.search(r"https?://arxiv\.org/abs/[\w.]+", text)
    if not (title and link):
        raise ExportError(f"{readme or benchmark}: cannot describe {benchmark!r} for {CATALOG_PATH}: need a '# Title' and an arxiv.org/abs link in its README")
    return CatalogEntry(title.group(1), link.group(0), FALLBACK_SECTION, tuple(task_names))


def patch(text: str | None, wanted: list[str], sections: dict[str, str], previous: list[str]) -> str:
    """`text` with our `previous` lines that are no longer wanted removed and the `wanted` ones present.

    `sections` maps each wanted line to its section heading; a missing heading is created at the end.
    """
    lines = (text if text is not None else NEW_FILE_HEADER).splitlines()
    stale = set(previous) - set(wanted)
    lines = [line for line in lines if line not in stale]
    for entry in wanted:
        if entry in lines:
            continue
        heading = sections[entry]
        if heading not in (line.strip() for line in lines):
            while lines and not lines[-1].strip():
                lines.pop()
            lines += ["", heading]
        start = next(i for i, line in enumerate(lines) if line.strip() == heading)
        end = start + 1
        while end < len(lines) and not lines[end].startswith("#") and lines[end].strip() != "---":
            end += 1
        insert_at = end
        while insert_at > start + 1 and not lines[insert_at - 1].strip():
            insert_at -= 1
        lines.insert(insert_at, entry)
    return "\n".join(lines) + "\n"
