"""The README's lmms-eval commands for real model backends, read back as data, so that the tests and the GPU
smoke run execute exactly what users are told to type (with the model path, and on a CPU the device, swapped).

A README block is marked `<!-- readme-hf: NAME -->` (Hugging Face backend) above a ```bash fence; every
`lmms-eval ...` line in it (backslash continuations joined) becomes a `CliCommand`. The vLLM commands are the
bash blocks whose command says `--model vllm`.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

HF_MARK = "readme-hf"
_BLOCK = re.compile(r"(?:<!-- (?P<mark>[\w-]+): (?P<name>\w+) -->\n)?```bash\n(?P<body>.*?)```", re.DOTALL)

# What a CPU-only machine adds to the HF commands (docs/BACKENDS.md, "Hugging Face").
CPU_DEVICE_ARGS = {"device": "cpu", "device_map": "cpu"}


@dataclass
class CliCommand:
    """One `lmms-eval` invocation of a README block."""

    block: str  # the block's name (the benchmark)
    model: str
    model_args: str
    tasks: list[str]
    env: dict[str, str] = field(default_factory=dict)  # VAR=value prefixes and `export`s before it

    @property
    def args(self) -> dict[str, str]:
        return parse_model_args(self.model_args)


def split_model_args(model_args: str) -> list[str]:
    """`a=1,b={"x":1,"y":2},c=[1,2]` -> ['a=1', 'b={"x":1,"y":2}', 'c=[1,2]'] (commas inside brackets kept)."""
    parts, depth, current = [], 0, ""
    for char in model_args:
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    if current:
        parts.append(current)
    return parts


def parse_model_args(model_args: str) -> dict[str, str]:
    """Key -> raw value, in order, as lmms-eval splits `--model_args` (values are not coerced here)."""
    out: dict[str, str] = {}
    for part in split_model_args(model_args):
        key, sep, value = part.partition("=")
        if not sep:
            raise ValueError(f"model arg without '=': {part!r} in {model_args!r}")
        out[key.strip()] = value
    return out


def format_model_args(args: dict[str, str]) -> str:
    return ",".join(f"{key}={value}" for key, value in args.items())


def with_model_args(model_args: str, **updates: str) -> str:
    """`model_args` with some values replaced (in place) or appended."""
    args = parse_model_args(model_args)
    args.update(updates)
    return format_model_args(args)


def _logical_lines(body: str) -> list[str]:
    return [line.strip() for line in re.sub(r"\\\n\s*", " ", body).splitlines() if line.strip()]


def readme_commands(readme: str | Path, mark: str | None = None, model: str | None = None) -> list[CliCommand]:
    """Every `lmms-eval` command in the README's bash blocks, optionally only those under `<!-- MARK: NAME -->`
    and/or with `--model MODEL`; environment prefixes and `export`s of the block are kept per command."""
    text = Path(readme).read_text(encoding="utf-8") if isinstance(readme, Path) else readme
    commands: list[CliCommand] = []
    for match in _BLOCK.finditer(text):
        if mark is not None and match.group("mark") != mark:
            continue
        exported: dict[str, str] = {}
        for line in _logical_lines(match.group("body")):
            words = shlex.split(line, comments=True)
            if words[:1] == ["export"]:
                exported.update(dict(w.split("=", 1) for w in words[1:] if "=" in w))
                continue
            prefix: dict[str, str] = {}
            while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
                key, value = words.pop(0).split("=", 1)
                prefix[key] = value
            if "lmms-eval" not in words[:1] and words[-2:] != ["-m", "lmms_eval"] and "lmms_eval" not in words:
                continue
            options = {words[i]: words[i + 1] for i in range(len(words) - 1) if words[i].startswith("--")}
            if model is not None and options.get("--model") != model:
                continue
            commands.append(
                CliCommand(
                    block=match.group("name") or "",
                    model=options.get("--model", ""),
                    model_args=options.get("--model_args", ""),
                    tasks=[t for t in options.get("--tasks", "").split(",") if t],
                    env={**exported, **prefix},
                )
            )
    return commands
