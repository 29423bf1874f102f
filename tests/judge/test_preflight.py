"""The judge preflight (issue 29): one cheap request before the first model request tells a missing key, a
rejected key, an unknown judge model and an unreachable endpoint apart from a judge that works; each failure
is one line naming the judge model, the endpoint, where the key comes from and what to set. Checked once per
process, endpoint, key and model; `LMMS_TASKS_JUDGE_PREFLIGHT=0` switches it off. These tests call the
client; `test_preflight_e2e.py` runs each failure through the real lmms-eval CLI."""

from __future__ import annotations

import json
import socket
from dataclasses import replace
from pathlib import Path

import pytest

from lmms_tasks.utils.services.llm_judge import judge
from lmms_tasks.utils.testing.openai_server import StandInServer

KEY = "sk-preflight-secret-0123456789abcdef"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def config_for(base_url: str, tmp_path: Path, **changes: object) -> judge.JudgeConfig:
    config = judge.JudgeConfig(
        model="stand-in-judge",
        base_url=base_url,
        api_key=KEY,
        timeout=5.0,
        max_retries=0,
        cache_dir=str(tmp_path / "cache"),
        progress=False,
        key_source="LMMS_TASKS_JUDGE_API_KEY",
    )
    return replace(config, **changes)  # type: ignore[arg-type]


def test_a_working_judge_passes_and_is_checked_once_per_endpoint(tmp_path: Path) -> None:
    with StandInServer(default_reply="<score>1/1</score>") as server:
        config = config_for(server.base_url, tmp_path)
        assert judge.preflight_problem(config) is None
        judge.announce(config, "task_a")
        judge.announce(config, "task_b")  # another task, the same judge: not checked again
        assert len(server.preflights) == 1 and server.requests == []  # the preflight is not a judge request
        (sent,) = server.preflights
        assert sent.model == "stand-in-judge" and sent.params.get("max_tokens") == 1


def test_the_judge_is_announced_once_per_task_and_again_when_it_changes(tmp_path: Path) -> None:
    """Two runs in one process (lmms-eval's Python API, a notebook): the second run's judge is named again when it
    is another one, and only once per task while it stays the same."""
    from loguru import logger

    lines: list[str] = []
    sink = logger.add(lambda message: lines.append(message.record["message"]), level="INFO")
    try:
        first = config_for(f"http://127.0.0.1:{closed_port()}/v1", tmp_path, preflight=False)
        second = replace(first, model="another-judge")
        for config in (first, first, second, first):
            judge.announce(config, "task_announced")
    finally:
        logger.remove(sink)
    named = [line for line in lines if line.startswith("task_announced: judge model")]
    assert named == [f"task_announced: judge {first.describe()}", f"task_announced: judge {second.describe()}"]


def test_no_key_is_named_without_sending_anything(tmp_path: Path) -> None:
    env = {"LMMS_TASKS_JUDGE_MODEL": "gpt-5-mini"}
    config = judge.JudgeConfig.resolve(default_model="gpt-4o", env=env)
    problem = judge.preflight_problem(config)
    assert problem is not None and "\n" not in problem
    assert "gpt-5-mini" in problem and "https://api.openai.com/v1" in problem and "has no key" in problem
    assert "set LMMS_TASKS_JUDGE_API_KEY" in problem and "LMMS_TASKS_JUDGE_PREFLIGHT=0" in problem


def test_a_rejected_key_is_named_and_never_shown(tmp_path: Path) -> None:
    with StandInServer(default_reply="x") as server:
        server.fault(lambda r: r.model == "stand-in-judge", "401-echo", times=None)  # echoes the Authorization header
        config = config_for(server.base_url, tmp_path)
        problem = judge.preflight_problem(config)
        with pytest.raises(judge.JudgeUnavailable) as raised:
            judge.announce(config, "task_401")
        base_url = server.base_url
    assert problem is not None and "\n" not in problem
    assert f"the judge stand-in-judge at {base_url} (key from LMMS_TASKS_JUDGE_API_KEY) rejected the key (HTTP 401" in problem
    assert "set LMMS_TASKS_JUDGE_API_KEY to a key this endpoint accepts" in problem
    assert KEY not in problem and KEY not in str(raised.value)
    assert raised.value.exit_status == 1
    assert len(server.preflights) == 2 and server.requests == []  # a failed answer is not kept: announce asked again


def test_a_judge_fixed_after_a_failed_preflight_passes_the_next_one_in_the_same_process(tmp_path: Path) -> None:
    """A notebook run stopped by the preflight, the judge then fixed: the next run in the same process is checked
    again and goes on; a judge that passed is not asked again."""
    with StandInServer(default_reply="x") as server:
        server.fault(lambda r: r.model == "stand-in-judge", "401-echo", times=1)
        config = config_for(server.base_url, tmp_path)
        assert judge.preflight_problem(config) is not None
        assert judge.preflight_problem(config) is None
        assert judge.preflight_problem(config) is None
        assert [r.status for r in server.preflights] == [401, 200]


def test_an_unknown_model_is_named(tmp_path: Path) -> None:
    with StandInServer(default_reply="x", served_models={"stand-in-vlm"}) as server:
        problem = judge.preflight_problem(config_for(server.base_url, tmp_path))
        assert [r.status for r in server.preflights] == [404]
    assert problem is not None and "does not serve model stand-in-judge (HTTP 404" in problem
    assert "set LMMS_TASKS_JUDGE_MODEL to a model this endpoint serves" in problem


def test_an_unreachable_endpoint_is_named(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    problem = judge.preflight_problem(config_for(dead, tmp_path))
    assert problem is not None and f"at {dead} (key from LMMS_TASKS_JUDGE_API_KEY) cannot be reached" in problem
    assert "set LMMS_TASKS_JUDGE_BASE_URL to an endpoint that is up" in problem


@pytest.mark.parametrize("fault", ["500", "malformed", "429"])
def test_an_endpoint_that_answers_otherwise_takes_the_key(fault: str, tmp_path: Path) -> None:
    """Only what judging can never get past stops a run; a server error or a rate limit may pass."""
    with StandInServer(default_reply="x") as server:
        server.fault(lambda r: True, fault, times=None, retry_after=0.01)
        assert judge.preflight_problem(config_for(server.base_url, tmp_path)) is None


def test_the_opt_out_sends_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LMMS_TASKS_JUDGE_PREFLIGHT", "0")
    with StandInServer(default_reply="x") as server:
        monkeypatch.setenv("LMMS_TASKS_JUDGE_BASE_URL", server.base_url)
        monkeypatch.setenv("LMMS_TASKS_JUDGE_API_KEY", KEY)
        server.fault(lambda r: True, "401-echo", times=None)
        config = judge.JudgeConfig.resolve(default_model="stand-in-judge")
        assert config.preflight is False
        judge.announce(config, "task_opt_out")  # no raise
        judge.check_judge(config)
        assert server.preflights == []


def test_score_checks_the_judge_before_its_first_request_only(tmp_path: Path) -> None:
    """Handed `check_first` in its metadata (the score command) a batch with requests to send checks the judge
    first and raises instead of failing every request; a batch answered from the cache sends nothing."""
    with StandInServer(default_reply="<score>1/1</score>") as server:
        good = config_for(server.base_url, tmp_path)
        requests = [judge.JudgeRequest(key="a", messages=[{"role": "user", "content": "judge a"}])]
        judge.judge_batch("task_cache", requests, str, config=good, output_dir=tmp_path / "out")
        judge.clear_memo()
        server.fault(lambda r: True, "401-echo", times=None)
        handed = judge.hand({}, judge.Handed(check_first=True))
        cached = judge.judge_batch("task_cache", requests, str, config=replace(good, api_key="sk-other-key-0123456789"), output_dir=tmp_path / "out", metadata=handed)
        assert cached.n_failed == 0 and server.preflights == []
        fresh = [judge.JudgeRequest(key="b", messages=[{"role": "user", "content": "judge b"}])]
        with pytest.raises(judge.JudgeUnavailable, match="rejected the key"):
            judge.judge_batch("task_new", fresh, str, config=replace(good, api_key="sk-other-key-0123456789"), output_dir=tmp_path / "out", metadata=handed)
        assert len(server.preflights) == 1 and len(server.requests) == 1  # only the first batch's request
        # outside the score command a batch never raises: the failure is recorded per request
        failed = judge.judge_batch("task_new", fresh, str, config=replace(good, api_key="sk-other-key-0123456789"), output_dir=tmp_path / "out")
        assert failed.n_failed == 1


# -- judge failures after the run: one line per task ---------------------------------------------------------


@pytest.mark.parametrize(("fault", "refused"), [("401-echo", True), ("500", False)])
def test_failed_requests_make_one_line_and_the_records_hold_every_one(fault: str, refused: bool, tmp_path: Path) -> None:
    from lmms_tasks.utils.services import status

    status.clear()
    n = 40
    with StandInServer(default_reply="x") as server:
        server.fault(lambda r: True, fault, times=None)
        config = config_for(server.base_url, tmp_path, backoff=0.01, backoff_max=0.02)
        requests = [judge.JudgeRequest(key=f"item-{i:02d}", messages=[{"role": "user", "content": f"judge {i}"}], meta={"doc_id": i}) for i in range(n)]
        batch = judge.judge_batch("task_fail", requests, str, config=config, output_dir=tmp_path / "out")
    (fault_record,) = status.faults("task_fail")
    status.clear()
    line = fault_record.message
    assert "\n" not in line and len(line) < 700, line  # not one entry per item
    assert line.startswith(f"{n}/{n} judge request(s) failed after retries, the first ('item-00'): HTTP {fault[:3]}")
    assert "item-01" not in line and "doc_id" not in line
    assert f"every failure is in {batch.records_path}" in line
    assert ("python -m lmms_tasks score" in line) is not refused  # re-judging cannot help a refused request
    assert ("fix its settings (docs/JUDGE.md)" in line) is refused
    assert KEY not in line
    records = [json.loads(x) for x in batch.records_path.read_text(encoding="utf-8").splitlines()]
    assert sorted(r["key"] for r in records if r["error"]) == [f"item-{i:02d}" for i in range(n)]
    assert all(f"HTTP {fault[:3]}" in r["error"] for r in records)


# -- issue 43: each refusal the preflight must stop on, and what the memo keys on --------------------------------


class Refusing:
    """A 127.0.0.1 endpoint that answers every chat completion with `status` and an OpenAI-shaped error body
    (`code`, `type`), or a chat completion for the models/keys/API versions `rule` lets through; records what came."""

    def __init__(self, status: int = 200, code: str | None = None, type_: str | None = None, rule: object = None) -> None:
        import http.server
        import threading

        self.seen: list[dict] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                seen = {"path": self.path, "model": body.get("model"), "key": self.headers.get("Authorization") or self.headers.get("api-key")}
                outer.seen.append(seen)
                answer = outer.status if outer.rule is None else outer.rule(seen)
                if answer == 200:
                    reply = {"id": "x", "object": "chat.completion", "created": 0, "model": seen["model"],
                             "choices": [{"index": 0, "message": {"role": "assistant", "content": "pong"}, "finish_reason": "length"}]}  # fmt: skip
                else:
                    reply = {"error": {"message": f"refused with {answer}", "type": outer.type_, "param": None, "code": outer.code}}
                data = json.dumps(reply).encode()
                self.send_response(answer)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.status, self.code, self.type_, self.rule = status, code, type_, rule
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)  # a prompt shutdown()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> Refusing:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


REFUSALS = [
    # (HTTP status, error code, error type) -> what the one line says, or None: the judge passes the preflight
    (401, "invalid_api_key", "invalid_request_error", "rejected the key (HTTP 401"),
    (403, None, "permission_error", "rejected the key (HTTP 403"),  # e.g. a key without access to the project or region
    (403, "unsupported_country_region_territory", "request_forbidden", "rejected the key (HTTP 403"),
    (404, "model_not_found", "invalid_request_error", "does not serve model stand-in-judge (HTTP 404"),
    (404, "DeploymentNotFound", None, "does not serve model stand-in-judge (HTTP 404"),  # Azure's spelling
    (429, "insufficient_quota", "insufficient_quota", "has no quota left (HTTP 429"),  # OpenAI's body
    (429, "insufficient_quota", None, "has no quota left (HTTP 429"),  # the code decides, whatever the type says
    (429, "rate_limit_exceeded", "requests", None),  # a rate limit clears: judging retries it
    (429, None, None, None),
    (400, "invalid_value", "invalid_request_error", None),  # e.g. max_tokens=1 refused: it took the key and knows the model
    (422, None, None, None),
    (500, None, "server_error", None),
    (503, None, None, None),
]


@pytest.mark.parametrize(("status", "code", "type_", "says"), REFUSALS, ids=[f"{s}-{c}-{t}" for s, c, t, _ in REFUSALS])
def test_each_refusal_the_preflight_stops_on(status: int, code: str | None, type_: str | None, says: str | None, tmp_path: Path) -> None:
    with Refusing(status, code, type_) as server:
        config = config_for(server.base_url, tmp_path)
        problem = judge.preflight_problem(config)
        if says is None:
            assert problem is None
            judge.check_judge(config)  # no raise
        else:
            assert problem is not None and says in problem and "\n" not in problem, problem
            assert f"the judge stand-in-judge at {server.base_url} (key from LMMS_TASKS_JUDGE_API_KEY)" in problem
            assert KEY not in problem
            with pytest.raises(judge.JudgeUnavailable):
                judge.check_judge(config)
        # one request per check, retried only on a connection error: an answer that passes is memoized, a refusal is asked again
        assert len(server.seen) == (1 if says is None else 2)


def test_the_memo_keys_on_endpoint_key_model_api_version_and_role(tmp_path: Path) -> None:
    """A preflight's answer is reused only for the same judge: each setting that identifies it is checked anew."""
    bad_key, bad_model, bad_version = "sk-revoked-0123456789abcdef", "retired-judge", "2023-05-15"

    def rule(seen: dict) -> int:
        if bad_key in str(seen["key"]):
            return 401
        if seen["model"] == bad_model or bad_model in seen["path"] or bad_version in seen["path"]:
            return 404
        return 200

    with Refusing(rule=rule) as first, Refusing(status=401) as second:
        good = config_for(first.base_url, tmp_path)
        assert judge.preflight_problem(good) is None
        assert judge.preflight_problem(good) is None and len(first.seen) == 1  # the same judge: asked once
        changed = {
            "key": (replace(good, api_key=bad_key), "rejected the key"),
            "model": (replace(good, model=bad_model), f"does not serve model {bad_model}"),
            "endpoint": (replace(good, base_url=second.base_url), "rejected the key"),
        }
        for what, (config, says) in changed.items():
            problem = judge.preflight_problem(config)
            assert problem is not None and says in problem, (what, problem)
        azure = replace(good, base_url=first.base_url.removesuffix("/v1"), api_version="2024-10-21", key_source="AZURE_OPENAI_API_KEY")
        assert judge.preflight_problem(azure) is None
        problem = judge.preflight_problem(replace(azure, api_version=bad_version))
        assert problem is not None and "does not serve model" in problem, problem
        rejected = replace(good, api_key=bad_key)
        for role in ("judge", "PC-VID judge"):  # the line names the role that asked
            assert judge.preflight_problem(rejected, role=role).startswith(f"the {role} stand-in-judge at ")
    assert len(second.seen) == 1
