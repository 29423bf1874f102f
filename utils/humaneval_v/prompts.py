"""HumanEval-V prompts per setting, from the byte-exact official strings (spec 2.3)."""

from __future__ import annotations

from lmms_tasks.utils.services.prompts import prompt, prompt_sha256

# setting -> (prompt key, whether the diagram is shown)
SETTINGS: dict[str, tuple[str, bool]] = {
    "v2c": ("humanevalv/v2/PROMPT_V2C", True),
    "v2c_cot": ("humanevalv/v2/PROMPT_V2C_WITH_COT", True),
    "v2t": ("humanevalv/v2/PROMPT_V2T", True),
    "t2c": ("humanevalv/v2/PROMPT_T2C", False),
    "gt_t2c": ("humanevalv/v2/PROMPT_T2C", False),
}


def uses_image(setting: str) -> bool:
    return SETTINGS[setting][1]


def build_prompt(setting: str, function_signature: str, specification: str | None = None) -> str:
    """The user text of one request; T2C settings need the problem specification (a description)."""
    key, _ = SETTINGS[setting]
    if setting in ("t2c", "gt_t2c"):
        if specification is None:
            raise ValueError(f"setting {setting!r} needs a problem specification")
        return prompt(key).format(function_signature=function_signature, problem_specification=specification)
    return prompt(key).format(function_signature=function_signature)


def template_sha256(setting: str) -> str:
    return prompt_sha256(SETTINGS[setting][0])
