"""The judge client against the stand-in server: retries, faults, cache, memo, records, usage, config."""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
from collections import Counter
from pathlib import Path

import openai
import pytest

from lmms_tasks.utils.services.llm_judge import judge
from lmms_tasks.utils.services.llm_judge.judge import JudgeConfig, JudgeRequest, judge_batch
from lmms_tasks.utils.testing.openai_server import StandInServer

HTTP = judge._http_module()  # the httpx-compatible package the installed openai client is built on

def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def per_text(server: StandInServer) -> Counter:
    return Counter(r.text for r in server.requests)


def parse_score(content: str) -> float | None:
    found = re.findall(r"<score>(\d+)/(\d+)</score>", content)
    return int(found[0][0]) / int(found[0][1]) if len(found) == 1 else None


def requests_for(texts: list[str]) -> list[JudgeRequest]:
    return [JudgeRequest(key=str(i), messages=user(t), meta={"doc_id": i}) for i, t in enumerate(texts)]


# -- faults --------------------------------------------------------------------------------------------

FAULT_CASES = [
    # (text, fault kind, times, expected server requests for this text, expect success)
    ("item rate-limited twice", "429", 2, 3, True),
    ("item server error twice", "500", 2, 3, True),
    ("item hangs once", "hang", 1, 2, True),
    ("item garbage body once", "malformed", 1, 2, True),
    ("item disconnect once", "disconnect", 1, 2, True),
    ("item empty content", "empty", 1, 1, True),
    ("item always 500", "500", None, 4, False),  # 1 + max_retries(3) attempts, then recorded as failed
    ("item healthy", None, 0, 1, True),
]


def test_faults_are_retried_counted_and_nothing_is_lost(server: StandInServer, fast_config: JudgeConfig, tmp_path: Path) -> None:
    for text, kind, times, _, _ in FAULT_CASES:
        if kind:
            server.fault(text, kind, times=times, retry_after=0.3 if kind == "429" else None)
    texts = [case[0] for case in FAULT_CASES]
    batch = judge_batch("fault_task", requests_for(texts), parse_score, config=fast_config, output_dir=tmp_path / "out")

    counts = per_text(server)
    for i, (text, _kind, _, expected_requests, ok) in enumerate(FAULT_CASES):
        outcome = batch.outcomes[str(i)]
        assert counts[text] == expected_requests, (text, counts[text])
        assert outcome.attempts == expected_requests, text
        if ok:
            assert outcome.error is None and outcome.content is not None, text
        else:
            assert outcome.content is None and "HTTP 500" in outcome.error, text
    assert batch.outcomes["5"].content == "" and batch.outcomes["5"].parsed is None  # empty: a reply, unparseable
    assert batch.outcomes["7"].parsed == 0.5
    assert (batch.n_failed, batch.n_unparsed) == (1, 1)
    assert batch.summary["failed"] == 1 and batch.summary["unparsed"] == 1 and batch.summary["requests"] == len(texts)
    assert len(batch.outcomes) == len(texts)

    # Retry-After honoured: the retries of the rate-limited item came at least 0.3 s apart.
    stamps = [r.received_at for r in server.requests if r.text == "item rate-limited twice"]
    assert all(b - a >= 0.3 for a, b in itertools.pairwise(stamps)), stamps

    records = [json.loads(line) for line in (tmp_path / "out" / "judgements" / "fault_task.jsonl").read_text().splitlines()]
    assert sorted(r["key"] for r in records) == sorted(str(i) for i in range(len(texts)))
    failed = [r for r in records if r["error"]]
    assert [r["meta"]["doc_id"] for r in failed] == [6] and failed[0]["reply"] is None and failed[0]["attempts"] == 4


def test_failed_requests_are_not_cached_and_are_retried_on_the_next_run(server: StandInServer, fast_config: JudgeConfig) -> None:
    server.fault("flaky", "500", times=4)  # exhausts 1 + 3 attempts in the first run only
    first = judge_batch("t", requests_for(["flaky", "fine"]), parse_score, config=fast_config)
    assert first.outcomes["0"].error and first.outcomes["1"].error is None
    judge.clear_memo()
    before = len(server.requests)
    second = judge_batch("t", requests_for(["flaky", "fine"]), parse_score, config=fast_config)
    assert [r.text for r in server.requests[before:]] == ["flaky"]
    assert second.n_failed == 0 and second.outcomes["1"].cached and not second.outcomes["0"].cached


ERROR_CASES = [
    (400, False),
    (401, False),
    (404, False),
    (408, True),
    (409, True),
    (429, True),
    (500, True),
    (503, True),
]


@pytest.mark.parametrize(("status", "retryable"), ERROR_CASES)
def test_status_classification(status: int, retryable: bool) -> None:
    request = HTTP.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = HTTP.Response(status, request=request, json={"error": {"message": "x"}})
    exc = openai.APIStatusError("x", response=response, body=None)
    assert judge._classify(exc)[0] is retryable


def test_non_retryable_error_fails_at_once(server: StandInServer, fast_config: JudgeConfig) -> None:
    """A client that cannot be built (no API key) fails every request without a call or a raise."""
    config = dataclasses.replace(fast_config, api_key=None)
    batch = judge_batch("t", requests_for(["a", "b"]), parse_score, config=config)
    assert batch.n_failed == 2 and server.requests == []
    assert "cannot create judge client" in batch.outcomes["0"].error


@pytest.mark.parametrize(
    ("headers", "lower", "upper"),
    [
        ({"retry-after-ms": "1500"}, 1.5, 1.65),
        ({"retry-after": "2"}, 2.0, 2.2),
        ({"retry-after": "900"}, 5.0, 5.5),  # capped by backoff_max
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0, 0.0),  # a date in the past: retry now
        ({"retry-after": "soon"}, 0.5, 1.0),  # unreadable: exponential backoff (attempt 1, backoff 1 s)
    ],
)
def test_retry_after_headers_set_the_wait(headers: dict, lower: float, upper: float) -> None:
    config = JudgeConfig(model="m", backoff=1.0, backoff_max=5.0)
    request = HTTP.Request("POST", "http://127.0.0.1/v1/chat/completions")
    exc = openai.RateLimitError("x", response=HTTP.Response(429, request=request, headers=headers), body=None)
    assert lower <= judge._backoff(config, 1, exc) <= upper


def test_exponential_backoff_grows_and_is_capped() -> None:
    config = JudgeConfig(model="m", backoff=1.0, backoff_max=4.0)
    exc = openai.APITimeoutError(request=HTTP.Request("POST", "http://x"))
    waits = {attempt: [judge._backoff(config, attempt, exc) for _ in range(50)] for attempt in (1, 2, 3, 6)}
    assert all(0.5 <= w <= 1.0 for w in waits[1]) and all(1.0 <= w <= 2.0 for w in waits[2])
    assert all(2.0 <= w <= 4.0 for w in waits[3]) and all(2.0 <= w <= 4.0 for w in waits[6])
    assert len(set(waits[1])) > 1  # jitter


def test_parser_exception_counts_as_unparsed(server: StandInServer, fast_config: JudgeConfig) -> None:
    def broken(content: str) -> float:
        raise RuntimeError("parser bug")

    batch = judge_batch("t", requests_for(["a"]), broken, config=fast_config)
    assert batch.n_unparsed == 1 and batch.n_failed == 0 and batch.outcomes["0"].content


def test_duplicate_keys_are_rejected_naming_the_key() -> None:
    with pytest.raises(ValueError, match="'7'"):
        judge_batch("t", [JudgeRequest(key="7", messages=user("a")), JudgeRequest(key="7", messages=user("b"))], parse_score, config=JudgeConfig(model="m"))


# -- cache, memo, records, usage --------------------------------------------------------------------------


def test_second_identical_batch_is_served_from_disk_cache(server: StandInServer, fast_config: JudgeConfig, tmp_path: Path) -> None:
    texts = [f"doc {i}" for i in range(10)]
    first = judge_batch("t", requests_for(texts), parse_score, config=fast_config)
    assert len(server.requests) == 10 and first.summary["cache_hits"] == 0
    judge.clear_memo()
    # another endpoint key and URL spelling: the cache is keyed by model + params + messages only
    other = dataclasses.replace(fast_config, api_key="another-secret", base_url=server.base_url + "/")
    second = judge_batch("t", requests_for(texts), parse_score, config=other)
    assert len(server.requests) == 10
    assert all(o.cached for o in second.outcomes.values()) and second.summary["cache_hits"] == 10
    assert {k: o.content for k, o in second.outcomes.items()} == {k: o.content for k, o in first.outcomes.items()}
    assert second.summary["input_tokens"] == 0 and second.summary["cached_input_tokens"] == first.summary["input_tokens"] > 0
    # a different judge model or request parameter is a different judgement
    judge.clear_memo()
    judge_batch("t", requests_for(texts[:2]), parse_score, config=dataclasses.replace(fast_config, params={"max_tokens": 65}))
    judge_batch("t", requests_for(texts[:2]), parse_score, config=dataclasses.replace(fast_config, model="other-judge"))
    assert len(server.requests) == 14
    assert len(list(Path(fast_config.cache_dir).glob("??/*.json"))) == 14
    assert not list(Path(fast_config.cache_dir).glob("??/*.tmp"))


def test_same_batch_in_one_process_is_memoized(server: StandInServer, fast_config: JudgeConfig) -> None:
    first = judge_batch("t", requests_for(["x", "y"]), parse_score, config=fast_config, prompt_sha256="abc")
    for entry in Path(fast_config.cache_dir).glob("??/*.json"):
        entry.unlink()
    again = judge_batch("t", requests_for(["x", "y"]), parse_score, config=fast_config, prompt_sha256="abc")
    assert again is first and len(server.requests) == 2
    changed = judge_batch("t", requests_for(["x", "z"]), parse_score, config=fast_config, prompt_sha256="abc")
    assert changed is not first and len(server.requests) == 4


def test_records_and_summary_files(server: StandInServer, fast_config: JudgeConfig, tmp_path: Path) -> None:
    server.script("bad", "no tag here")
    reqs = [JudgeRequest(key="a", messages=user("good one"), meta={"doc_id": 3, "category": "x"}), JudgeRequest(key="b", messages=user("bad one"), meta={"doc_id": 4})]
    batch = judge_batch("rec_task", reqs, parse_score, config=fast_config, output_dir=tmp_path / "run", prompt_sha256="f" * 64)
    directory = tmp_path / "run" / "judgements"
    lines = [json.loads(line) for line in (directory / "rec_task.jsonl").read_text(encoding="utf-8").splitlines()]
    by_key = {r["key"]: r for r in lines}
    assert by_key["a"]["meta"] == {"doc_id": 3, "category": "x"} and by_key["a"]["parsed"] == 0.5
    assert by_key["b"]["reply"] == "no tag here" and by_key["b"]["parsed"] is None and by_key["b"]["error"] is None
    for record in lines:
        assert record["judge_model"] == "stand-in-judge" and record["attempts"] == 1 and record["cached"] is False
        assert record["input_tokens"] > 0 and record["output_tokens"] > 0
    summary = json.loads((directory / "rec_task.summary.json").read_text())
    assert summary == batch.summary
    assert summary["judge_model"] == "stand-in-judge" and summary["endpoint_host"] == f"127.0.0.1:{server.port}"
    assert summary["prompt_sha256"] == "f" * 64 and summary["requests"] == 2 and summary["unparsed"] == 1
    assert summary["input_tokens"] == sum(r["input_tokens"] for r in lines)
    assert summary["params"] == {"max_tokens": 64}
    info = judge.judge_summary_metric(batch)
    assert "judge=stand-in-judge@127.0.0.1" in info and "prompt_sha256=ffffffffffff" in info and "unparsed=1" in info


def test_records_default_next_to_the_cache_without_output_dir(server: StandInServer, fast_config: JudgeConfig) -> None:
    batch = judge_batch("norun", requests_for(["a"]), parse_score, config=fast_config)
    expected = Path(fast_config.cache_dir).parent / "runs" / "judgements" / "norun.jsonl"
    assert batch.records_path == expected and expected.is_file()


def test_token_usage_goes_to_lmms_eval_usage_block(server: StandInServer, fast_config: JudgeConfig) -> None:
    from lmms_eval.models.model_utils import usage_metrics

    usage_metrics.reset_usage_metrics()
    batch = judge_batch("usage_task", requests_for(["a", "b", "c"]), parse_score, config=fast_config)
    judge.clear_memo()
    judge_batch("usage_task", requests_for(["a", "b", "c"]), parse_score, config=fast_config)  # all cached: not logged again
    usage = usage_metrics.summarize_usage_metrics()
    assert usage["by_source"]["judge"]["n_api_calls"] == 3
    assert usage["by_task"]["usage_task"]["input_tokens"] == batch.summary["input_tokens"] > 0
    usage_metrics.reset_usage_metrics()


# -- request shaping and configuration --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "params", "expected"),
    [
        ("gpt-4o", {"max_tokens": 300, "temperature": 0}, {"max_tokens": 300, "temperature": 0}),
        ("gpt-5-mini", {"max_tokens": 300, "temperature": 0}, {"max_completion_tokens": 300}),
        ("o3-mini", {"max_tokens": 10}, {"max_completion_tokens": 10}),
        ("azure/o4-mini", {"temperature": 1}, {}),
        ("gpt-5-mini", {"max_tokens": None}, {}),  # None: do not send (the API default applies)
        ("stand-in-judge", {"max_tokens": None, "top_p": 0.9}, {"top_p": 0.9}),
    ],
)
def test_request_payload(model: str, params: dict, expected: dict) -> None:
    config = JudgeConfig(model=model, params=params)
    payload = judge.request_payload(config, JudgeRequest(key="k", messages=user("hi")))
    assert payload == {"model": model, "messages": user("hi"), **expected}


def test_request_params_override_config_defaults() -> None:
    config = JudgeConfig(model="m", params={"max_tokens": 300, "temperature": 0.0})
    payload = judge.request_payload(config, JudgeRequest(key="k", messages=user("hi"), params={"max_tokens": 10}))
    assert payload["max_tokens"] == 10 and payload["temperature"] == 0.0


def _write_task(root: Path, name: str, metadata_judge: dict | None) -> None:
    folder = root / name
    folder.mkdir(parents=True)
    meta = {"version": 1, **({"judge": metadata_judge} if metadata_judge is not None else {})}
    (folder / f"{name}.yaml").write_text(json.dumps({"task": name, "metadata": meta}), encoding="utf-8")


def _yaml_judge(root: Path, task: str) -> dict | None:
    """The task's `metadata.judge` as lmms-eval hands it over (the test's own YAML, read here)."""
    path = root / task / f"{task}.yaml"
    return json.loads(path.read_text(encoding="utf-8"))["metadata"].get("judge") if path.is_file() else None


@pytest.fixture
def include_root(tmp_path: Path) -> Path:
    root = tmp_path / "tasks"
    _write_task(root, "plain_task", None)
    _write_task(root, "pinned_task", {"model": "yaml-judge", "concurrency": 3, "params": {"max_tokens": 77}})
    _write_task(root, "secret_task", {"api_key": "sk-leak"})
    _write_task(root, "typo_task", {"modle": "x"})
    return root


PRECEDENCE_CASES = [
    # (task, env, --judge-* options, expected model, expected concurrency, expected params)
    ("plain_task", {}, {}, "builtin-judge", 32, {"max_tokens": 300}),
    ("plain_task", {"LMMS_TASKS_JUDGE_MODEL": "env-judge", "LMMS_TASKS_JUDGE_CONCURRENCY": "9"}, {}, "env-judge", 9, {"max_tokens": 300}),
    ("pinned_task", {"LMMS_TASKS_JUDGE_MODEL": "env-judge", "LMMS_TASKS_JUDGE_CONCURRENCY": "9"}, {}, "yaml-judge", 3, {"max_tokens": 77}),
    ("pinned_task", {"LMMS_TASKS_JUDGE_MODEL": "env-judge"}, {"model": "cli-judge"}, "cli-judge", 3, {"max_tokens": 77}),
    ("not_a_task_of_ours", {"LMMS_TASKS_JUDGE_MODEL": "env-judge"}, {}, "env-judge", 32, {"max_tokens": 300}),
]


@pytest.mark.parametrize(("task", "env", "over", "model", "concurrency", "params"), PRECEDENCE_CASES)
def test_config_precedence(include_root: Path, task: str, env: dict, over: dict, model: str, concurrency: int, params: dict) -> None:
    config = JudgeConfig.resolve(task=task, default_model="builtin-judge", defaults={"max_tokens": 300}, env=env, yaml=_yaml_judge(include_root, task), options=over)
    assert (config.model, config.concurrency, dict(config.params)) == (model, concurrency, params)


def test_env_settings_are_parsed_and_key_falls_back_to_openai(include_root: Path) -> None:
    env = {
        "LMMS_TASKS_JUDGE_BASE_URL": "http://127.0.0.1:9/v1",
        "LMMS_TASKS_JUDGE_TIMEOUT": "2.5",
        "LMMS_TASKS_JUDGE_MAX_RETRIES": "0",
        "LMMS_TASKS_JUDGE_CACHE_DIR": "/tmp/x",
        "LMMS_TASKS_JUDGE_PROGRESS": "0",
        "OPENAI_API_KEY": "sk-openai",
    }
    config = JudgeConfig.resolve(task="plain_task", env=env, yaml=_yaml_judge(include_root, "plain_task"))
    assert (config.base_url, config.timeout, config.max_retries, config.cache_dir, config.progress) == ("http://127.0.0.1:9/v1", 2.5, 0, "/tmp/x", False)
    assert config.api_key == "sk-openai" and config.endpoint_host == "127.0.0.1:9"
    assert "sk-openai" not in repr(config)
    explicit = JudgeConfig.resolve(env={**env, "LMMS_TASKS_JUDGE_API_KEY": "sk-judge"})
    assert explicit.api_key == "sk-judge"


@pytest.mark.parametrize(
    ("task", "env", "message"),
    [
        ("plain_task", {"LMMS_TASKS_JUDGE_CONCURRENCY": "many"}, "LMMS_TASKS_JUDGE_CONCURRENCY='many'"),
        ("plain_task", {"LMMS_TASKS_JUDGE_CONCURRENCY": "0"}, "concurrency must be >= 1"),
        ("secret_task", {}, "metadata.judge.api_key of task 'secret_task'"),
        ("typo_task", {}, "metadata.judge.modle of task 'typo_task' is not a judge setting"),
    ],
)
def test_bad_settings_name_the_culprit(include_root: Path, task: str, env: dict, message: str) -> None:
    with pytest.raises(judge.JudgeConfigError, match=re.escape(message)):
        JudgeConfig.resolve(task=task, env=env, yaml=_yaml_judge(include_root, task))


@pytest.mark.parametrize(
    ("base_url", "api_version", "azure"),
    [
        ("https://myres.openai.azure.com", None, True),
        ("https://gw.example.com/openai", "2024-10-21", True),
        ("http://127.0.0.1:8000/v1", None, False),
        (None, None, False),
    ],
)
def test_azure_client_is_chosen_by_version_or_host(base_url: str | None, api_version: str | None, azure: bool) -> None:
    config = JudgeConfig(model="gpt-4o", base_url=base_url, api_key="k", api_version=api_version)
    client = judge.get_client(config)
    assert isinstance(client, openai.AzureOpenAI) is azure and isinstance(client, openai.OpenAI)
    assert client.max_retries == 0
    assert judge.get_client(config) is client


def test_http_pool_is_sized_to_the_concurrency() -> None:
    client = judge.get_client(JudgeConfig(model="m", base_url="http://127.0.0.1:1/v1", api_key="k", concurrency=200))
    pool = client._client._transport._pool  # the connection pool of the underlying HTTP client
    assert pool._max_connections >= 200 and pool._max_keepalive_connections >= 200


def test_identical_requests_in_one_batch_make_one_call(server: StandInServer, fast_config: JudgeConfig) -> None:
    reqs = [JudgeRequest(key="a", messages=user("same prompt")), JudgeRequest(key="b", messages=user("same prompt")), JudgeRequest(key="c", messages=user("other"))]
    batch = judge_batch("t", reqs, parse_score, config=fast_config)
    assert per_text(server) == Counter({"same prompt": 1, "other": 1})
    assert batch.outcomes["a"].content == batch.outcomes["b"].content is not None
    assert batch.summary["cache_hits"] == 1 and batch.n_failed == 0


def test_results_file_as_output_path_puts_records_beside_it(tmp_path: Path) -> None:
    config = JudgeConfig(model="m")
    assert judge.records_dir(config, tmp_path / "out" / "results.json") == tmp_path / "out" / "judgements"
    assert judge.records_dir(config, str(tmp_path / "out")) == tmp_path / "out" / "judgements"


def test_judge_endpoint_ignores_the_model_under_tests_openai_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # e.g. set for the model under test
    client = judge.get_client(JudgeConfig(model="gpt-4o", api_key="k"))
    assert str(client.base_url).startswith("https://api.openai.com/v1")
    config = JudgeConfig.resolve(env={"LMMS_TASKS_JUDGE_API_VERSION": "2024-10-21", "AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com"})
    assert config.is_azure and config.endpoint_host == "r.openai.azure.com"


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, None),  # OpenAI without a key: every request fails with a clear error, nothing crashes
        ({"LMMS_TASKS_JUDGE_BASE_URL": "http://localhost:8000/v1"}, "EMPTY"),  # a local vLLM needs no key
        ({"LMMS_TASKS_JUDGE_BASE_URL": "https://api.openai.com/v1"}, None),
        ({"LMMS_TASKS_JUDGE_BASE_URL": "http://localhost:8000/v1", "OPENAI_API_KEY": "sk-o"}, "sk-o"),
        ({"LMMS_TASKS_JUDGE_API_VERSION": "2024-10-21", "AZURE_OPENAI_API_KEY": "az", "OPENAI_API_KEY": "sk-o"}, "az"),
    ],
)
def test_api_key_fallbacks(env: dict, expected: str | None) -> None:
    assert JudgeConfig.resolve(env=env).api_key == expected


def test_yaml_names_the_key_variable(include_root: Path) -> None:
    _write_task(include_root, "keyed_task", {"api_key_env": "MY_JUDGE_KEY"})
    keyed = _yaml_judge(include_root, "keyed_task")
    assert JudgeConfig.resolve(task="keyed_task", env={"MY_JUDGE_KEY": "sk-mine", "OPENAI_API_KEY": "sk-o"}, yaml=keyed).api_key == "sk-mine"
    assert JudgeConfig.resolve(task="keyed_task", env={"OPENAI_API_KEY": "sk-o"}, yaml=keyed).api_key == "sk-o"
