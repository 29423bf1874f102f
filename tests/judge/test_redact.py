"""Credentials never reach a log line or a record: configured keys and credential-shaped text are replaced."""

from __future__ import annotations

import pytest

from lmms_tasks.utils.services.llm_judge.secrets import REDACTED, redact

KEY = "sk-proj-AbCdEf0123456789xyz"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"HTTP 401: invalid credentials: Authorization: Bearer {KEY}", "HTTP 401: invalid credentials: Authorization: [REDACTED]"),
        ('{"error": "bad token", "authorization": "Bearer abcdefghij0123"}', '{"error": "bad token", "authorization": "[REDACTED]"}'),
        ('{"authorization": "Basic dXNlcjpwYXNzd29yZA=="}', '{"authorization": "[REDACTED]"}'),
        ("proxy said: api-key: 0123456789abcdef0123", "proxy said: api-key: [REDACTED]"),
        (f"key {KEY} rejected", "key [REDACTED] rejected"),
        ("bearer eyJhbGciOiJIUzI1NiJ9.payload.sig end", "bearer [REDACTED] end"),
        ("HTTP 500: upstream timeout", "HTTP 500: upstream timeout"),  # nothing to hide
        ("Score: 1", "Score: 1"),
        ("", ""),
    ],
)
def test_credential_shapes(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_configured_and_environment_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_GATEWAY_TOKEN", "plainvalue-not-shaped-42")
    monkeypatch.setenv("LMMS_TASKS_JUDGE_API_KEY", "EMPTY")  # a placeholder, too short to be a secret
    assert redact("echo: plainvalue-not-shaped-42 !") == f"echo: {REDACTED} !"
    assert redact("custom azure key 9f8e7d6c5b4a", extra=["9f8e7d6c5b4a"]) == f"custom azure key {REDACTED}"
    assert redact("EMPTY is not a secret") == "EMPTY is not a secret"
    assert redact(None) is None


def test_a_secret_containing_another_is_hidden_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Longest first: replacing the short key inside the long one first would leave the long key's tail."""
    short, long = "gatewaypass01", "gatewaypass01-tail-9x8y7z"
    monkeypatch.setenv("GATEWAY_PASSWORD", short)
    monkeypatch.setenv("GATEWAY_TOKEN", long)
    for order in ([short, long], [long, short]):
        assert redact(f"echo {long} and {short}.", extra=order) == f"echo {REDACTED} and {REDACTED}."
    assert "tail" not in (redact(f"{long}") or "")
