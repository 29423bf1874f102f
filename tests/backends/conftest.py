"""The tiny Qwen2.5-VL, built once per test session (a few seconds, nothing downloaded)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_vlm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from lmms_tasks.utils.testing.tiny_vlm import build

    return build(tmp_path_factory.mktemp("tiny-qwen2.5-vl") / "model")
