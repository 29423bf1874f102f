"""What the judge adds to lmms-eval's `llm_judge`: the disk cache and resume, retries of network errors, 408/409/429
and 5xx only (a server's `Retry-After` honoured), the bounded pool, and the preflight, each against a tiny local
OpenAI-compatible server defined here (standard library only; no network, no key). Waits are observed through the
judge module's `time.sleep`, never measured on the clock."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from lmms_tasks.utils.services.llm_judge import judge

Answer = tuple[int, dict[str, Any], dict[str, str]]  # status, JSON body, headers


def reply(text: str) -> Answer:
    choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
    body = {"id": "c", "object": "chat.completion", "created": 0, "model": "tiny-judge", "choices": [choice]}
    return 200, {**body, "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}, {}


def error(status: int, code: str = "error", headers: dict[str, str] | None = None) -> Answer:
    return status, {"error": {"message": f"status {status}", "type": code, "code": code}}, headers or {}


class TinyServer:
    """Answers `POST /v1/chat/completions` with `answer(body, n)` (`n`: how many requests with these messages came
    before), records every body with its headers, and counts the requests in flight at once (each held `hold` s)."""

    def __init__(self, answer: Callable[[dict[str, Any], int], Answer] | None = None, hold: float = 0.0) -> None:
        self.answer = answer or (lambda body, n: reply(f"verdict for {body['messages'][-1]['content']}"))
        self.hold, self.bodies, self.headers = hold, [], []
        self.in_flight = self.most_in_flight = 0
        self.lock = threading.Lock()
        tiny = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - the standard library's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with tiny.lock:
                    seen = sum(1 for b in tiny.bodies if b["messages"] == body["messages"])
                    tiny.bodies.append(body)
                    tiny.headers.append({k.lower(): v for k, v in self.headers.items()})
                    tiny.in_flight += 1
                    tiny.most_in_flight = max(tiny.most_in_flight, tiny.in_flight)
                threading.Event().wait(tiny.hold)
                status, payload, headers = tiny.answer(body, seen)
                with tiny.lock:
                    tiny.in_flight -= 1
                data = json.dumps(payload).encode()
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()  # a prompt shutdown()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def judged(self) -> list[str]:
        """The last message of each judge request (the preflight's left out)."""
        return [b["messages"][-1]["content"] for b, h in zip(self.bodies, self.headers) if judge.PREFLIGHT_HEADER.lower() not in h]


@pytest.fixture
def tiny_server() -> Iterator[Callable[..., TinyServer]]:
    started: list[TinyServer] = []
    judge.clear_memo()

    def start(answer: Callable[[dict[str, Any], int], Answer] | None = None, hold: float = 0.0) -> TinyServer:
        started.append(TinyServer(answer, hold))
        return started[-1]

    yield start
    for server in started:
        server.httpd.shutdown()
    judge.clear_memo()


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every backoff the judge waits, recorded instead of slept (only the judge module's clock is replaced)."""
    waited: list[float] = []

    class Clock:
        sleep = staticmethod(waited.append)

        def __getattr__(self, name: str) -> Any:
            return getattr(time, name)

    monkeypatch.setattr(judge, "time", Clock())
    return waited


def config_for(tiny: TinyServer, cache: Path, **settings: Any) -> judge.JudgeConfig:
    base = {"model": "tiny-judge", "base_url": tiny.base_url, "api_key": "EMPTY", "concurrency": 4, "timeout": 30.0, "max_retries": 3}
    return judge.JudgeConfig(**{**base, "backoff": 0.5, "backoff_max": 20.0, "cache_dir": str(cache), "progress": False, **settings})


def requests_for(*texts: str, **params: Any) -> list[judge.JudgeRequest]:
    return [judge.JudgeRequest(key=str(i), messages=[{"role": "user", "content": t}], params=dict(params)) for i, t in enumerate(texts)]


def test_a_second_run_is_answered_from_the_disk_cache(tiny_server: Callable[..., TinyServer], tmp_path: Path) -> None:
    server = tiny_server()
    config = config_for(server, tmp_path / "cache")
    first = judge.judge_batch("t", requests_for("a", "b"), str, config=config, output_dir=tmp_path / "run1")
    judge.clear_memo()
    second = judge.judge_batch("t", requests_for("a", "b"), str, config=config, output_dir=tmp_path / "run2")
    assert sorted(server.judged()) == ["a", "b"]
    assert [o.content for o in second.outcomes.values()] == [o.content for o in first.outcomes.values()] == ["verdict for a", "verdict for b"]
    assert all(o.cached for o in second.outcomes.values()) and second.summary["cache_hits"] == 2


@pytest.mark.parametrize("change", ["model", "params", "messages"])
def test_the_cache_key_is_the_whole_request(tiny_server: Callable[..., TinyServer], tmp_path: Path, change: str) -> None:
    """Model, request parameters and messages each decide the entry: changing any one sends the request again."""
    server = tiny_server()
    config = config_for(server, tmp_path / "cache", params={"max_tokens": 8})
    judge.judge_batch("t", requests_for("a"), str, config=config, output_dir=tmp_path)
    judge.clear_memo()
    changed = {
        "model": (config_for(server, tmp_path / "cache", model="other-judge", params={"max_tokens": 8}), requests_for("a")),
        "params": (config, requests_for("a", temperature=0.5)),
        "messages": (config, requests_for("a ")),
    }[change]
    batch = judge.judge_batch("t", changed[1], str, config=changed[0], output_dir=tmp_path)
    assert len(server.judged()) == 2 and not any(o.cached for o in batch.outcomes.values())


def test_a_run_that_failed_midway_resumes_with_only_the_unfinished_requests(tiny_server: Callable[..., TinyServer], tmp_path: Path, sleeps: list[float]) -> None:
    down = {"c", "d"}
    server = tiny_server(lambda body, n: error(503) if body["messages"][-1]["content"] in down else reply("ok"))
    config = config_for(server, tmp_path / "cache", max_retries=1)
    first = judge.judge_batch("t", requests_for("a", "b", "c", "d"), str, config=config, output_dir=tmp_path)
    assert first.n_failed == 2 and sorted(server.judged()) == ["a", "b", "c", "c", "d", "d"]
    down.clear()
    judge.clear_memo()
    second = judge.judge_batch("t", requests_for("a", "b", "c", "d"), str, config=config, output_dir=tmp_path)
    assert second.n_failed == 0 and sorted(server.judged()[6:]) == ["c", "d"]
    assert {k: o.cached for k, o in second.outcomes.items()} == {"0": True, "1": True, "2": False, "3": False}


@pytest.mark.parametrize("status", [500, 502, 503, 408, 409, 429])
def test_server_errors_and_rate_limits_are_retried(tiny_server: Callable[..., TinyServer], tmp_path: Path, sleeps: list[float], status: int) -> None:
    server = tiny_server(lambda body, n: error(status) if n < 2 else reply("fine"))
    batch = judge.judge_batch("t", requests_for("a"), str, config=config_for(server, tmp_path), output_dir=tmp_path)
    outcome = batch.outcomes["0"]
    assert (outcome.content, outcome.error, outcome.attempts) == ("fine", None, 3) and len(sleeps) == 2


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_other_client_errors_fail_at_once(tiny_server: Callable[..., TinyServer], tmp_path: Path, sleeps: list[float], status: int) -> None:
    server = tiny_server(lambda body, n: error(status) if n < 2 else reply("fine"))
    batch = judge.judge_batch("t", requests_for("a"), str, config=config_for(server, tmp_path), output_dir=tmp_path)
    outcome = batch.outcomes["0"]
    assert outcome.content is None and outcome.error.startswith(f"HTTP {status}") and outcome.attempts == 1
    assert server.judged() == ["a"] and sleeps == []


def test_a_connection_refused_is_retried_then_fails(tmp_path: Path, sleeps: list[float]) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = judge.JudgeConfig(model="m", base_url=f"http://127.0.0.1:{port}/v1", api_key="EMPTY", max_retries=2, cache_dir=str(tmp_path), progress=False)
    outcome = judge.judge_batch("t", requests_for("a"), str, config=config, output_dir=tmp_path).outcomes["0"]
    assert outcome.content is None and "connection error" in outcome.error and outcome.attempts == 3 and len(sleeps) == 2


@pytest.mark.parametrize(("headers", "wait"), [({"Retry-After": "7"}, 7.0), ({"retry-after-ms": "2500"}, 2.5), ({"Retry-After": "600"}, 20.0)])
def test_retry_after_is_honoured_up_to_backoff_max(
    tiny_server: Callable[..., TinyServer], tmp_path: Path, sleeps: list[float], headers: dict[str, str], wait: float
) -> None:
    """The server's wait replaces the computed backoff (0.5 s here), jittered upwards by at most 10%, capped at
    `backoff_max` (20 s here)."""
    server = tiny_server(lambda body, n: error(429, "rate_limit_exceeded", headers) if n == 0 else reply("fine"))
    batch = judge.judge_batch("t", requests_for("a"), str, config=config_for(server, tmp_path), output_dir=tmp_path)
    assert batch.outcomes["0"].content == "fine" and len(sleeps) == 1
    assert wait <= sleeps[0] <= wait * 1.1


def test_without_retry_after_the_backoff_doubles(tiny_server: Callable[..., TinyServer], tmp_path: Path, sleeps: list[float]) -> None:
    server = tiny_server(lambda body, n: error(500) if n < 3 else reply("fine"))
    judge.judge_batch("t", requests_for("a"), str, config=config_for(server, tmp_path), output_dir=tmp_path)
    assert len(sleeps) == 3 and all(c / 2 <= s <= c for s, c in zip(sleeps, (0.5, 1.0, 2.0)))


def test_no_more_requests_in_flight_than_the_concurrency(tiny_server: Callable[..., TinyServer], tmp_path: Path) -> None:
    server = tiny_server(hold=0.3)
    texts = [f"item {i}" for i in range(12)]
    batch = judge.judge_batch("t", requests_for(*texts), str, config=config_for(server, tmp_path, concurrency=3), output_dir=tmp_path)
    assert batch.n_failed == 0 and sorted(server.judged()) == sorted(texts)
    assert 1 <= server.most_in_flight <= 3


@pytest.mark.parametrize(
    ("answer", "stops"),
    [
        (error(401, "invalid_api_key"), "rejected the key"),
        (error(403, "forbidden"), "rejected the key"),
        (error(404, "model_not_found"), "does not serve model"),
        (error(429, "insufficient_quota"), "no quota left"),
        (error(429, "rate_limit_exceeded"), None),
        (error(400, "invalid_request_error"), None),
        (error(500), None),
        (reply("pong"), None),
    ],
)
def test_the_preflight_stops_only_on_a_judge_that_cannot_judge(tiny_server: Callable[..., TinyServer], tmp_path: Path, answer: Answer, stops: str | None) -> None:
    server = tiny_server(lambda body, n: answer)
    config = config_for(server, tmp_path)
    problem = judge.preflight_problem(config)
    assert (problem is None) if stops is None else (stops in problem), problem
    assert len(server.bodies) == 1 and judge.PREFLIGHT_HEADER.lower() in server.headers[0]
    assert server.bodies[0]["max_tokens"] == 1 and server.bodies[0]["model"] == "tiny-judge"
    if stops:
        with pytest.raises(judge.JudgeUnavailable, match=stops) as raised:
            judge.check_judge(config)
        assert raised.value.exit_status == 1 and len(server.bodies) == 2  # a refusal is not kept: asked again (the judge may be fixed meanwhile)


def test_the_preflight_stops_on_no_key_without_sending_anything(tmp_path: Path) -> None:
    config = judge.JudgeConfig(model="gpt-4o", base_url="https://api.openai.com/v1", api_key=None, cache_dir=str(tmp_path))
    assert "has no key" in judge.preflight_problem(config)


def test_the_preflight_is_not_cached_nor_recorded(tiny_server: Callable[..., TinyServer], tmp_path: Path) -> None:
    server = tiny_server()
    config = config_for(server, tmp_path / "cache")
    handed = judge.hand(None, judge.Handed(check_first=True))
    batch = judge.judge_batch("t", requests_for("a"), str, config=config, output_dir=tmp_path / "out", metadata=handed)
    assert len(server.bodies) == 2 and server.judged() == ["a"]
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 1 and batch.summary["requests"] == 1
