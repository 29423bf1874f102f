"""HumanEval-V prompts per setting, from the byte-exact official strings (spec 2.3)."""

from __future__ import annotations

import csv
from importlib import resources

from lmms_tasks.utils.services.prompts import prompt, prompt_sha256

# The settings' table (settings.csv beside this module: one row per setting, its comment says what each column is);
# the commands read the rest of a row (official label and file name, report row).
TABLE: dict[str, dict[str, str]] = {
    row["setting"]: row for row in csv.DictReader(line for line in resources.files(__package__).joinpath("settings.csv").read_text(encoding="utf-8").splitlines() if not line.startswith("#"))
}
SETTINGS: dict[str, tuple[str, bool]] = {setting: (row["prompt"], row["diagram"] == "yes") for setting, row in TABLE.items()}  # setting -> (prompt key, diagram shown)


def uses_image(setting: str) -> bool:
    return SETTINGS[setting][1]


def build_prompt(setting: str, function_signature: str, specification: str | None = None) -> str:
    """The user text of one request; T2C settings need the problem specification (a description)."""
    key, _ = SETTINGS[setting]
    if not uses_image(setting):  # the T2C settings: a specification in place of the diagram
        if specification is None:
            raise ValueError(f"setting {setting!r} needs a problem specification")
        return prompt(key).format(function_signature=function_signature, problem_specification=specification)
    return prompt(key).format(function_signature=function_signature)


def template_sha256(setting: str) -> str:
    return prompt_sha256(SETTINGS[setting][0])
