"""Format exported Python the way the target lmms-eval checkout's own tooling would.

The configuration is read from the checkout: `.pre-commit-config.yaml` hooks (black / isort / ruff with
their args), else `pyproject.toml` `[tool.ruff]` / `[tool.black]`. A target without any (an installed
wheel) gets the repository HEAD's: black --line-length=240, then isort --profile black. Tools run in a
staging copy laid out like the checkout (so isort sees `lmms_eval/` as first-party, as pre-commit does),
with the checkout's config files copied beside it, repeated until nothing changes.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import tomllib
import yaml

from lmms_tasks.utils.commands.upstream.sources import ExportError

CONFIG_FILES = ("pyproject.toml", "setup.cfg", ".isort.cfg", "ruff.toml", ".ruff.toml")
HEAD_DEFAULT = [["black", "--line-length=240"], ["isort", "--profile", "black"]]


@dataclass
class Style:
    """The formatter commands (`python -m <tool> ...` argument lists) and where they came from."""

    fix: list[list[str]]
    check: list[list[str]]
    origin: str
    config_files: list[Path] = field(default_factory=list)

    def describe(self) -> str:
        return f"{' && '.join(' '.join(c) for c in self.fix)} (from {self.origin})"


def _hook_commands(hook_id: str, args: list[str]) -> tuple[list[str], list[str]] | None:
    if hook_id == "black":
        return ["black", *args], ["black", "--check", *args]
    if hook_id == "isort":
        return ["isort", *args], ["isort", "--check-only", *args]
    if hook_id in ("ruff-format",):
        return ["ruff", "format", *args], ["ruff", "format", "--check", *args]
    if hook_id in ("ruff", "ruff-check"):
        fix_args = [a for a in args if a not in ("--fix", "--exit-non-zero-on-fix")]
        return ["ruff", "check", "--fix", *fix_args], ["ruff", "check", *fix_args]
    return None


def detect_style(root: Path) -> Style:
    """The checkout's formatter/linter commands (see the module docstring for the precedence)."""
    config_files = [root / name for name in CONFIG_FILES if (root / name).is_file()]
    precommit = root / ".pre-commit-config.yaml"
    if precommit.is_file():
        try:
            config = yaml.safe_load(precommit.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as exc:
            raise ExportError(f"{precommit}: cannot read: {exc}") from None
        fix, check = [], []
        for repo in config.get("repos", []):
            for hook in repo.get("hooks", []):
                commands = _hook_commands(str(hook.get("id")), [str(a) for a in hook.get("args", [])])
                if commands:
                    fix.append(commands[0])
                    check.append(commands[1])
        if fix:
            return Style(fix, check, str(precommit), config_files)
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        tool = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {})
        if "ruff" in tool:
            return Style([["ruff", "check", "--fix"], ["ruff", "format"]], [["ruff", "check"], ["ruff", "format", "--check"]], f"{pyproject} [tool.ruff]", config_files)
        if "black" in tool:
            fix = [["black"]] + ([["isort"]] if "isort" in tool else [])
            check = [["black", "--check"]] + ([["isort", "--check-only"]] if "isort" in tool else [])
            return Style(fix, check, f"{pyproject} [tool.black]", config_files)
    return Style([list(c) for c in HEAD_DEFAULT], [["black", "--check", "--line-length=240"], ["isort", "--check-only", "--profile", "black"]], "lmms-eval HEAD's .pre-commit-config.yaml (the target has no formatter configuration)", config_files)


def _run(command: list[str], files: list[str], cwd: Path, check: bool) -> subprocess.CompletedProcess[str]:
    tool = command[0]
    argv = [sys.executable, "-m", tool, *command[1:], *files]
    try:
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600, check=False)
    except FileNotFoundError as exc:  # pragma: no cover - sys.executable always exists
        raise ExportError(f"cannot run {tool}: {exc}") from None
    if "No module named" in proc.stderr and tool in proc.stderr:
        raise ExportError(f"{tool} is not installed in this environment (needed to match the target's style): pip install {tool}")
    if not check and proc.returncode not in (0,) and not (tool == "ruff" and command[1:2] == ["check"]):
        raise ExportError(f"{' '.join(command)} failed on the exported files:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return proc


def format_sources(files: dict[str, str], style: Style) -> dict[str, str]:
    """Format every `.py` entry of {checkout-relative path: text}; other entries are returned unchanged."""
    python = sorted(p for p in files if p.endswith(".py"))
    if not python:
        return dict(files)
    with tempfile.TemporaryDirectory(prefix="lmms_tasks_style_") as tmp:
        stage = Path(tmp)
        for config in style.config_files:
            shutil.copyfile(config, stage / config.name)
        for rel in python:
            path = stage / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(files[rel], encoding="utf-8")
        # A package the export does not touch (lmms_eval/__init__.py) would make the stage's lmms_eval/ a namespace
        # package, and isort would then sort `lmms_eval.models` (absent here) as third-party, unlike in the checkout.
        for top in {rel.split("/", 1)[0] for rel in python if "/" in rel}:
            (stage / top / "__init__.py").touch()
        previous: dict[str, str] = {}
        for _ in range(4):
            for command in style.fix:
                _run(command, python, stage, check=False)
            current = {rel: (stage / rel).read_text(encoding="utf-8") for rel in python}
            if current == previous:
                break
            previous = current
        else:
            raise ExportError(f"formatters did not reach a fixed point on the exported files ({style.describe()})")
        failures = [p for p in (_run(c, python, stage, check=True) for c in style.check) if p.returncode != 0]
        if failures:
            details = "\n".join((p.stdout + p.stderr)[-3000:] for p in failures)
            raise ExportError(f"exported files do not pass the target's checks ({style.describe()}):\n{details}")
        formatted = dict(files)
        formatted.update(previous)
        return formatted
