"""Shared fixtures for the judge tests: a stand-in judge server, a fast config, a clean memo."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from lmms_tasks.utils import judge
from lmms_tasks.utils.testing.openai_server import StandInServer

JUDGE_ENV = ("MODEL", "BASE_URL", "API_KEY", "API_VERSION", "CONCURRENCY", "TIMEOUT", "MAX_RETRIES", "BACKOFF", "BACKOFF_MAX", "CACHE_DIR", "PROGRESS")


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No judge setting leaks in from the developer's environment; no batch is memoized across tests."""
    for suffix in JUDGE_ENV:
        monkeypatch.delenv(judge.ENV_PREFIX + suffix, raising=False)
    for name in ("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    judge.clear_memo()
    yield
    judge.clear_memo()


@pytest.fixture
def server() -> Iterator[StandInServer]:
    with StandInServer(default_reply=lambda r: f"<score>1/2</score> for {r.text[-12:]}", hang_seconds=5.0) as s:
        yield s


@pytest.fixture
def fast_config(server: StandInServer, tmp_path: Path) -> judge.JudgeConfig:
    """Short timeout and backoff so fault tests take seconds; the cache in the test's tmp dir."""
    return judge.JudgeConfig(
        model="stand-in-judge",
        base_url=server.base_url,
        api_key="EMPTY",
        concurrency=8,
        timeout=1.0,
        max_retries=3,
        backoff=0.01,
        backoff_max=1.0,
        cache_dir=str(tmp_path / "cache"),
        progress=False,
        params={"max_tokens": 64},
    )

