"""Benchmark prompt strings are served byte for byte: every entry matches its recorded sha256, and the
packaged table is the reference file (../shared/reference/prompts_exact.json, beside the checkout in CI)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from lmms_tasks.utils.services import prompts

REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "reference" / "prompts_exact.json"
PACKAGED = Path(prompts.__file__).parent / "resources" / "prompts_exact.json"


@pytest.mark.parametrize("key", prompts.keys())
def test_every_prompt_matches_its_sha256(key: str) -> None:
    text = prompts.prompt(key)
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == prompts.prompt_sha256(key)


def test_packaged_table_is_the_reference_file() -> None:
    packaged = json.loads(PACKAGED.read_text(encoding="utf-8"))
    assert len(packaged) == 15
    if REFERENCE.is_file():  # the reference sits beside the checkout in CI and in development
        assert PACKAGED.read_bytes() == REFERENCE.read_bytes()


def test_a_tampered_prompt_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    table = json.loads(PACKAGED.read_text(encoding="utf-8"))
    table["haerae/judge/prompt_template"]["text"] += " "
    monkeypatch.setattr(prompts, "_table", lambda: table)
    with pytest.raises(prompts.PromptIntegrityError):
        prompts.prompt("haerae/judge/prompt_template")
