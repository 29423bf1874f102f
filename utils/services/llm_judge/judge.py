"""Judging built on lmms-eval's `llm_judge` (`ServerConfig`, `Request`/`Response`, `OpenAIProvider`), adding what it
lacks: a content-addressed disk cache (a re-run or a resumed run repeats no finished call), retries of network errors,
408/409/429 and 5xx only (honouring `Retry-After`), a bounded pool, a preflight check before inference, one JSONL record
per request and a summary beside the results. A task's batch step builds one `JudgeRequest` per item and calls
`judge_batch` once; nothing here raises for a judge-side error: a request still failing after its retries gets
`outcome.error` and is counted.

Settings, lowest precedence first (`JudgeConfig.resolve`): the benchmark's default model and params < the environment
`LMMS_TASKS_JUDGE_*` (only read) < the task YAML's `metadata.judge` < the judge recorded with the run < a command's
options; a hook gets them from the metadata it is handed (`JudgeConfig.for_task`). No task YAML is read here, no
setting kept in a module global, and nothing touches the network at import time.
"""

from __future__ import annotations

import email.utils
import json
import os
import random
import re
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from lmms_eval.llm_judge.base import ServerInterface
from lmms_eval.llm_judge.protocol import Request, Response, ServerConfig
from lmms_eval.llm_judge.providers.openai import OpenAIProvider
from lmms_eval.models.model_utils.usage_metrics import log_usage

from lmms_tasks import HELP
from lmms_tasks.utils.services import status as run_status
from lmms_tasks.utils.services.cache import DiskCache, compute_once, content_key, write_atomic
from lmms_tasks.utils.services.llm_judge.secrets import redact
from lmms_tasks.utils.services.logging import logger

ENV_PREFIX = "LMMS_TASKS_JUDGE_"
DEFAULT_CACHE_DIR = "~/.cache/lmms_tasks/judge"
DEFAULT_AZURE_API_VERSION = "2024-10-21"
DEFAULT_BASE_URL = "https://api.openai.com/v1"  # explicit: the client would otherwise follow OPENAI_BASE_URL
RETRYABLE_STATUS = frozenset({408, 409, 429})
REASONING_PREFIXES = ("gpt-5", "o1", "o3", "o4")

# config field -> (environment suffix, parser); the YAML `metadata.judge` mapping uses the field names.
_FIELDS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "model": ("MODEL", str),
    "base_url": ("BASE_URL", str),
    "api_key": ("API_KEY", str),
    "api_version": ("API_VERSION", str),
    "concurrency": ("CONCURRENCY", int),
    "timeout": ("TIMEOUT", float),
    "max_retries": ("MAX_RETRIES", int),
    "backoff": ("BACKOFF", float),
    "backoff_max": ("BACKOFF_MAX", float),
    "cache_dir": ("CACHE_DIR", str),
    "progress": ("PROGRESS", lambda v: v.strip().lower() not in ("0", "false", "no", "off", "")),
    "preflight": ("PREFLIGHT", lambda v: v.strip().lower() not in ("0", "false", "no", "off", "")),
}
_SECRET_YAML_KEYS = ("api_key",)  # never read secrets from a task YAML; name the variable with api_key_env

# The task metadata keys a hook reads its judge from: the YAML's `judge:` mapping, and what a command hands over (`Handed`).
YAML_KEY = "judge"
HANDED_KEY = "lmms_tasks_handed"


class JudgeConfigError(ValueError):
    """A judge setting is malformed; the message names the variable or YAML key at fault."""


@dataclass(frozen=True)
class JudgeConfig:
    """Everything that decides which endpoint judges and how; request `params` are the benchmark's defaults."""

    model: str
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    api_version: str | None = None
    concurrency: int = 32
    timeout: float = 300.0
    max_retries: int = 6
    backoff: float = 1.0  # first retry waits about this long; doubles per attempt, with jitter
    backoff_max: float = 60.0  # cap for computed backoff and for a server's Retry-After
    cache_dir: str = DEFAULT_CACHE_DIR
    progress: bool = True
    preflight: bool = True  # one cheap request checks key, model and endpoint before the run's first model request
    params: Mapping[str, Any] = field(default_factory=dict)
    key_source: str = ""  # where api_key came from: a variable's name, or why there is none (never the key)

    @classmethod
    def for_task(
        cls,
        task: str,
        metadata: Mapping[str, Any] | None,
        default_model: str = "gpt-4o",
        defaults: Mapping[str, Any] | None = None,
        *,
        env: Mapping[str, str] | None = None,
    ) -> JudgeConfig:
        """The judge of a task from the metadata it was handed (the loader's `metadata`, the batch step's
        `config.metadata`): its YAML `judge:` mapping and what a command added (`handed`)."""
        metadata = metadata or {}
        yaml_judge = metadata.get(YAML_KEY)
        if yaml_judge is not None and not isinstance(yaml_judge, Mapping):
            raise JudgeConfigError(f"metadata.judge of task {task!r} must be a mapping, got {type(yaml_judge).__name__}")
        given = handed_to(metadata)
        return cls.resolve(task, default_model, defaults, env=env, yaml=yaml_judge, recorded=given.recorded, options=given.options)

    @classmethod
    def resolve(
        cls,
        task: str | None = None,
        default_model: str = "gpt-4o",
        defaults: Mapping[str, Any] | None = None,
        *,
        env: Mapping[str, str] | None = None,
        yaml: Mapping[str, Any] | None = None,
        recorded: Mapping[str, Any] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> JudgeConfig:
        """The arguments in precedence order, lowest first: the built-in `default_model` and `defaults` <
        `env` (LMMS_TASKS_JUDGE_*; default os.environ, only read) < `yaml` (the task's `metadata.judge`) <
        `recorded` (the judge recorded with the run) < `options` (the command's `--judge-*` options);
        `task` only names the task in error messages."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {"model": default_model}
        params: dict[str, Any] = dict(defaults or {})
        key_source = ""
        for name, (suffix, parse) in _FIELDS.items():
            raw = env.get(ENV_PREFIX + suffix)
            if raw is not None and raw != "":
                try:
                    values[name] = parse(raw)
                except ValueError as exc:
                    raise JudgeConfigError(f"{ENV_PREFIX}{suffix}={raw!r} is not a valid {name}: {exc}") from exc
                if name == "api_key":
                    key_source = ENV_PREFIX + suffix
        for key, value in (yaml or {}).items():
            where = f"metadata.judge.{key} of task {task!r}"
            if key in _SECRET_YAML_KEYS:
                raise JudgeConfigError(f"{where}: do not put secrets in a task YAML; use api_key_env or {ENV_PREFIX}API_KEY")
            if key == "api_key_env":
                if env.get(str(value)):
                    values["api_key"] = env[str(value)]
                    key_source = f"{value} (metadata.judge.api_key_env)"
            elif key == "params":
                if not isinstance(value, Mapping):
                    raise JudgeConfigError(f"{where} must be a mapping of request parameters")
                params.update(value)
            elif key in _FIELDS:
                try:
                    values[key] = _FIELDS[key][1](value) if isinstance(value, str) else value
                except ValueError as exc:
                    raise JudgeConfigError(f"{where}={value!r} is invalid: {exc}") from exc
            else:
                raise JudgeConfigError(f"{where} is not a judge setting (known: {sorted([*_FIELDS, 'api_key_env', 'params'])})")
        forced = {}
        for layer, where in ((recorded, "recorded judge"), (options, "--judge-* options")):
            unknown = set(layer or {}) - set(_FIELDS) - {"params"}
            if unknown:
                raise JudgeConfigError(f"unknown judge settings in the {where}: {sorted(unknown)}")
            forced.update({k: v for k, v in (layer or {}).items() if v is not None})
        params.update(forced.pop("params", {}) or {})
        if forced.get("api_key"):
            key_source = "the --judge-* options"
        values.update(forced)
        if values.get("api_version") and not values.get("base_url"):
            values["base_url"] = env.get("AZURE_OPENAI_ENDPOINT")
        if not values.get("api_key"):
            fallback = "AZURE_OPENAI_API_KEY" if _is_azure(values) else "OPENAI_API_KEY"
            values["api_key"] = env.get("AZURE_OPENAI_API_KEY") if _is_azure(values) else env.get("OPENAI_API_KEY")
            key_source = f"{fallback} (no {ENV_PREFIX}API_KEY set)" if values["api_key"] else ""
        if not values.get("api_key") and values.get("base_url") and not _is_azure(values):
            host = urlparse(values["base_url"]).hostname or ""
            values["api_key"] = None if host.endswith("openai.com") else "EMPTY"  # local servers (vLLM, SGLang) need none
            key_source = "" if host.endswith("openai.com") else "none needed (a local endpoint gets the placeholder EMPTY)"
        config = cls(**values, params=params, key_source=key_source or f"none found (set {ENV_PREFIX}API_KEY)")
        if config.concurrency < 1 or config.max_retries < 0 or config.timeout <= 0:
            raise JudgeConfigError(f"judge concurrency must be >= 1, max_retries >= 0 and timeout > 0 (got {config})")
        return config

    def server_config(self) -> ServerConfig:
        """This judge as lmms-eval's `ServerConfig` (what its providers read)."""
        return ServerConfig(model_name=self.model, timeout=self.timeout, num_retries=self.max_retries + 1, retry_delay=self.backoff, max_concurrent=self.concurrency)

    @property
    def endpoint_host(self) -> str:
        return urlparse(self.base_url).netloc if self.base_url else "api.openai.com"

    @property
    def endpoint(self) -> str:
        return self.base_url or DEFAULT_BASE_URL

    def describe(self) -> str:
        """One line for the log: model, endpoint and where the key comes from (never the key)."""
        return f"model {self.model} at {self.endpoint}, key from {self.key_source}"

    @property
    def is_azure(self) -> bool:
        return _is_azure(self.__dict__)

    @property
    def is_reasoning_model(self) -> bool:
        """gpt-5*, o1/o3/o4 names (as lmms-eval decides): max_completion_tokens, no temperature."""
        return self.model.rsplit("/", 1)[-1].lower().startswith(REASONING_PREFIXES)


_announced: set[tuple[str, str, str]] = set()  # (task, role, the judge as described): a changed judge is announced again
_announce_lock = threading.Lock()

PREFLIGHT_HEADER = "X-Lmms-Tasks-Preflight"  # marks the preflight request (the stand-in server counts it apart)
PREFLIGHT_TIMEOUT = 30.0  # seconds at most for the preflight request (the judge's own timeout if shorter)
_preflights: dict[tuple[Any, ...], str | None] = {}


class JudgeUnavailable(RuntimeError):
    """The preflight found that the judge cannot judge (no key, a rejected key, an unknown model, no endpoint): one line
    naming model, endpoint, key and fix; the run stops with exit status 1 (`exit_status`, as for bad data)."""

    exit_status = run_status.EXIT_DATA


def endpoint_problem(url: str, timeout: float = 3.0) -> str | None:
    """None if a TCP connection to the endpoint's host and port opens now (nothing is sent), else why not."""
    import socket

    parsed = urlparse(url)
    try:
        with socket.create_connection((parsed.hostname or "", parsed.port or (443 if parsed.scheme == "https" else 80)), timeout=timeout):
            return None
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"


def preflight_problem(config: JudgeConfig, role: str = "judge") -> str | None:
    """None when the judge takes requests, else one line saying why not and what to set: a one-token chat completion,
    once per process for each endpoint, key and model that passes it (a judge that failed it is asked again the next
    time: it may have been started or fixed meanwhile). No key, 401/403, 404, 429 `insufficient_quota` and no endpoint
    fail it; any other answer (a reply, 400, 429, 5xx, a malformed body) shows that it takes the key and knows the model."""
    cache = (config.endpoint, config.api_version, config.model, content_key({"key": config.api_key or ""}), role)
    with _announce_lock:
        if cache in _preflights:
            return _preflights[cache]
    problem = _preflight(config, role)
    if problem is None:
        with _announce_lock:
            _preflights[cache] = problem
    return problem


def _preflight(config: JudgeConfig, role: str) -> str | None:
    import openai

    where = f"the {role} {config.model} at {config.endpoint} (key from {config.key_source})"
    skip = f"{HELP['judge_docs']}; {ENV_PREFIX}PREFLIGHT=0 skips this check"
    if not config.api_key:
        fallback = "AZURE_OPENAI_API_KEY" if config.is_azure else "OPENAI_API_KEY"
        return f"the {role} {config.model} at {config.endpoint} has no key: set {ENV_PREFIX}API_KEY (or {fallback}), or {ENV_PREFIX}BASE_URL to a local server ({skip})"
    payload: dict[str, Any] = {"model": config.model, "messages": [{"role": "user", "content": "ping"}]}
    payload["max_completion_tokens" if config.is_reasoning_model else "max_tokens"] = 1
    last: Exception | None = None
    for attempt in range(2):  # one retry: a connection hiccup must not stop a run
        try:
            client = get_client(config).with_options(timeout=min(config.timeout, PREFLIGHT_TIMEOUT), max_retries=0)
            client.chat.completions.create(**payload, extra_headers={PREFLIGHT_HEADER: "1"})
            return None
        except (openai.APIConnectionError, openai.APITimeoutError) as exc:  # APITimeoutError is a connection error
            last = exc
            if attempt == 0:
                time.sleep(1.0)
        except openai.APIStatusError as exc:
            detail = _one_line(redact(f"HTTP {exc.status_code}: {exc.message}", [config.api_key]))
            if exc.status_code in (401, 403):
                return f"{where} rejected the key ({detail}): set {ENV_PREFIX}API_KEY to a key this endpoint accepts ({skip})"
            if exc.status_code == 404:
                return (
                    f"{where} does not serve model {config.model} ({detail}): set {ENV_PREFIX}MODEL to a model this endpoint serves "
                    f"(on Azure: the deployment name), or {ENV_PREFIX}BASE_URL to the endpoint that serves it ({skip})"
                )
            if exc.status_code == 429 and getattr(exc, "code", None) == "insufficient_quota":
                return f"{where} has no quota left ({detail}): add credit or set {ENV_PREFIX}API_KEY to another key ({skip})"
            logger.info(f"{role} preflight: {config.model} at {config.endpoint} answered {detail}; it takes the key and knows the model")
            return None
        except openai.APIResponseValidationError:
            return None  # it answered
        except Exception as exc:  # noqa: BLE001 - e.g. a client that cannot be built, a body that is not JSON
            if isinstance(exc, ValueError):  # an answer that is not a chat completion is still an answer
                return None
            return f"{where} cannot be used: {_one_line(redact(f'{type(exc).__name__}: {exc}', [config.api_key]))} ({skip})"
    reason = "timed out" if isinstance(last, openai.APITimeoutError) else f"{last.__cause__ or last}"
    return (
        f"{where} cannot be reached ({_one_line(redact(reason, [config.api_key]))}): start it, or set {ENV_PREFIX}BASE_URL "
        f"to an endpoint that is up ({skip})"
    )


def _one_line(text: str, limit: int = 240) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_judge(config: JudgeConfig, role: str = "judge") -> None:
    """Raise `JudgeUnavailable` when the preflight fails (nothing when `config.preflight` is off)."""
    if config.preflight:
        problem = preflight_problem(config, role)
        if problem:
            raise JudgeUnavailable(problem)


def announce(config: JudgeConfig, task: str, role: str = "judge") -> None:
    """Before any model request: log which judge scores `task` and check it (`check_judge`, which stops the run); with
    the preflight off only warn when the endpoint cannot be reached now (a judge down at judging time: exit status 3)."""
    described = config.describe()
    with _announce_lock:
        first = (task, role, described) not in _announced
        _announced.add((task, role, described))
    if first:
        logger.info(f"{task}: {role} {described}")
    if config.preflight:
        check_judge(config, role)  # every call (a loader may run twice); the answer is cached
        return
    if not first:
        return
    problem = endpoint_problem(config.endpoint)
    if problem:
        logger.warning(
            f"{task}: the {role} endpoint {config.endpoint} cannot be reached now ({problem}): every {role} request will fail "
            f"unless it comes up before judging; set {ENV_PREFIX}BASE_URL / {ENV_PREFIX}API_KEY ({HELP['judge_docs']}); "
            f"once it is up, {HELP['rescore']}"
        )


def _is_azure(values: Mapping[str, Any]) -> bool:
    url = values.get("base_url") or ""
    return bool(values.get("api_version")) or urlparse(url).netloc.endswith((".openai.azure.com", ".cognitiveservices.azure.com"))


@dataclass(frozen=True)
class RecordedReplies:
    """Judge replies recorded elsewhere (e.g. the judge column of an official score file), by request key;
    `source` names where they come from and stands in for the endpoint in the summary."""

    replies: Mapping[str, str]
    source: str
    model: str = "recorded"


@dataclass(frozen=True)
class Handed:
    """What a command adds to the task config it hands the hooks (`metadata[HANDED_KEY]`): the judge recorded with the run
    and its options (judge settings above the YAML's), replies recorded elsewhere (nothing is sent) and `check_first`
    (the preflight before the first request the cache cannot answer: a re-score has no loader to run it)."""

    recorded: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    replies: RecordedReplies | None = None
    check_first: bool = False


def handed_to(metadata: Mapping[str, Any] | None) -> Handed:
    """What a command handed the task in its metadata (`Handed()` in a run: lmms-eval hands only the YAML's)."""
    found = (metadata or {}).get(HANDED_KEY)
    return found if isinstance(found, Handed) else Handed()


def hand(metadata: Mapping[str, Any] | None, handed: Handed) -> dict[str, Any]:
    """A copy of a task's metadata with `handed` added: what a command puts into the config it hands over."""
    return {**(metadata or {}), HANDED_KEY: handed}


def public_url(url: str | None) -> str | None:
    """An endpoint URL fit for a record: without user, password, query or fragment (they may hold keys)."""
    if not url:
        return url
    parts = urlparse(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc += f":{parts.port}"
    return parts._replace(netloc=netloc, query="", fragment="", params="").geturl()


@dataclass
class JudgeRequest(Request):
    """lmms-eval's judge `Request` (its `messages`) with a `key` unique within a batch (e.g. the doc id), extra
    chat-completion `params` (over the judge's) and `meta`, copied into the record."""

    key: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class JudgeOutcome:
    """The result of one request: `content` is None exactly when `error` is set (failed after retries)."""

    key: str
    content: str | None = None
    parsed: Any = None
    error: str | None = None
    cached: bool = False
    usage: dict[str, int] = field(default_factory=dict)
    attempts: int = 0
    finish_reason: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class JudgeBatch:
    """All outcomes of one `judge_batch` call, by request key, plus the summary recorded in the results."""

    task: str
    outcomes: dict[str, JudgeOutcome]
    summary: dict[str, Any]
    records_path: Path | None = None

    @property
    def n_failed(self) -> int:
        return sum(1 for o in self.outcomes.values() if o.error is not None)

    @property
    def n_unparsed(self) -> int:
        return sum(1 for o in self.outcomes.values() if o.error is None and o.parsed is None)


# -- the client: lmms-eval's OpenAIProvider with our client, retry policy and preflight ---------------------

_clients: dict[tuple[Any, ...], Any] = {}
_clients_lock = threading.Lock()


def _http_module() -> Any:
    """The httpx-compatible package the installed `openai` client is built on (httpx, or its successor)."""
    import openai

    return sys.modules[openai.DefaultHttpxClient.__mro__[1].__module__.split(".")[0]]


def get_client(config: JudgeConfig) -> Any:
    """One thread-safe `openai` client per endpoint configuration, its own retries off, its HTTP pool sized to the
    concurrency (a smaller pool would serialise requests behind free connections)."""
    key = (config.base_url, config.api_key, config.api_version, config.timeout, config.concurrency, config.is_azure)
    with _clients_lock:
        if key not in _clients:
            import openai

            http, pool = _http_module(), config.concurrency + 4
            limits = http.Limits(max_connections=pool, max_keepalive_connections=pool)
            http_client = openai.DefaultHttpxClient(limits=limits, timeout=http.Timeout(config.timeout, connect=min(config.timeout, 10.0)))
            common: dict[str, Any] = {"api_key": config.api_key, "max_retries": 0, "timeout": config.timeout, "http_client": http_client}
            if config.is_azure:
                version = config.api_version or DEFAULT_AZURE_API_VERSION
                client = openai.AzureOpenAI(azure_endpoint=config.base_url, api_version=version, **common)
            else:
                client = openai.OpenAI(base_url=config.base_url or DEFAULT_BASE_URL, **common)
            _ = client.chat.completions  # load the lazily imported resources now, not in the first wave of requests
            _clients[key] = client
        return _clients[key]


@dataclass
class JudgeResponse(Response):
    """lmms-eval's judge `Response`, with how many attempts it took and the choice's finish reason."""

    attempts: int = 0
    finish_reason: str | None = None


class JudgeProvider(OpenAIProvider):
    """lmms-eval's `OpenAIProvider` configured by a `JudgeConfig` instead of the environment (any OpenAI-compatible
    endpoint, or Azure), sending the request's exact payload (`request_payload`) with our retry policy: connection
    errors, timeouts, malformed replies, 408/409/429 and 5xx are retried with jittered exponential backoff (a server's
    `Retry-After` / `retry-after-ms` honoured, capped by `backoff_max`); any other error fails at once. `evaluate`
    never raises for a judge-side error: the response has `success` False and the error, keys redacted."""

    def __init__(self, judge: JudgeConfig) -> None:
        ServerInterface.__init__(self, judge.server_config())  # not OpenAIProvider's: it reads OPENAI_API_KEY / OPENAI_API_URL
        self.judge, self.api_key, self.base_url, self.use_client = judge, judge.api_key, judge.endpoint, True
        self.client = get_client(judge)

    def is_available(self) -> bool:
        return bool(self.api_key)

    def evaluate(self, request: Request) -> JudgeResponse:
        payload = {**request_payload(self.judge, request), "messages": self.prepare_messages(request)}
        error = ""
        for attempt in range(1, self.judge.max_retries + 2):
            try:
                response = self.client.chat.completions.create(**payload)
                choices = getattr(response, "choices", None)
                message = getattr(choices[0], "message", None) if choices else None
                if message is None:
                    raise _Malformed("no message in the first choice" if choices else "no choices in the reply")
                usage = getattr(response, "usage", None)
                tokens = {"input_tokens": int(getattr(usage, "prompt_tokens", 0) or 0), "output_tokens": int(getattr(usage, "completion_tokens", 0) or 0)}
                finish = getattr(choices[0], "finish_reason", None)
                # empty content is a reply (unparseable), not a failure; kept as sent (no strip)
                return JudgeResponse(message.content or "", getattr(response, "model", None), tokens, attempts=attempt, finish_reason=finish)
            except Exception as exc:  # noqa: BLE001 - every judge-side failure becomes the response's error
                retryable, description = _classify(exc)
                error = redact(f"{description} (attempt {attempt}/{self.judge.max_retries + 1})", [self.api_key])
                if not retryable or attempt > self.judge.max_retries:
                    return JudgeResponse("", None, success=False, error_message=error, attempts=attempt)
                time.sleep(_backoff(self.judge, attempt, exc))
        return JudgeResponse("", None, success=False, error_message=error)


def request_payload(config: JudgeConfig, request: Request) -> dict[str, Any]:
    """The exact chat.completions keyword arguments (model, messages and the merged, translated params)."""
    params = {**config.params, **getattr(request, "params", {})}
    params = {k: v for k, v in params.items() if v is not None}
    if config.is_reasoning_model:
        if "max_tokens" in params:
            params.setdefault("max_completion_tokens", params.pop("max_tokens"))
        params.pop("temperature", None)
    return {"model": config.model, "messages": request.messages, **params}


def cache_key(payload: Mapping[str, Any]) -> str:
    """Judge model + request params + exact messages; never the endpoint or its key."""
    return content_key({"v": 1, **payload})


class _Malformed(Exception):
    """A 200 reply that is not a usable chat completion (retried like a server error)."""


def _retry_after(exc: Exception) -> float | None:
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:  # an HTTP date
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, OverflowError):
        return None


def _classify(exc: Exception) -> tuple[bool, str]:
    """(retryable, description) for an exception raised by one attempt."""
    import openai

    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        retryable = status in RETRYABLE_STATUS or status >= 500
        return retryable, f"HTTP {status}: {str(exc)[:300]}"
    if isinstance(exc, openai.APITimeoutError):
        return True, "timeout"
    if isinstance(exc, openai.APIConnectionError):
        return True, f"connection error: {exc.__cause__ or exc}"[:300]
    if isinstance(exc, (_Malformed, ValueError, openai.APIResponseValidationError)):
        return True, f"malformed reply: {exc}"[:300]
    return False, f"{type(exc).__name__}: {exc}"[:300]


def _backoff(config: JudgeConfig, attempt: int, exc: Exception) -> float:
    hinted = _retry_after(exc)
    if hinted is not None:
        return min(hinted, config.backoff_max) * random.uniform(1.0, 1.1)
    ceiling = min(config.backoff_max, config.backoff * (2 ** (attempt - 1)))
    return random.uniform(ceiling / 2, ceiling)


def _parse(parse: Callable[[str], Any], content: str, key: str) -> tuple[Any, str | None]:
    try:
        return parse(content), None
    except Exception as exc:  # noqa: BLE001 - a parser bug must not lose the batch; the item counts as unparsed
        logger.warning(f"judge reply parser raised on request {key!r}: {type(exc).__name__}: {exc}")
        return None, f"{type(exc).__name__}: {exc}"


# -- the batch ------------------------------------------------------------------------------------------

_memo: dict[str, JudgeBatch] = {}
_memo_lock = threading.Lock()


def clear_memo() -> None:
    """Forget in-process batches (tests; a long-lived process judging the same task twice on purpose)."""
    with _memo_lock:
        _memo.clear()


def _callable_name(fn: Callable[..., Any]) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def records_dir(config: JudgeConfig, output_dir: str | os.PathLike[str] | None) -> Path:
    """`<output_dir>/judgements`, or the cache directory's sibling `runs/judgements` without an output dir."""
    if output_dir:
        path = Path(output_dir).expanduser()
        if path.suffix in (".json", ".jsonl"):  # lmms-eval also accepts a results *file* as --output_path
            path = path.parent
        return path / "judgements"
    return Path(config.cache_dir).expanduser().parent / "runs" / "judgements"


def judge_batch(
    task: str,
    requests: Sequence[JudgeRequest],
    parse: Callable[[str], Any],
    config: JudgeConfig | None = None,
    output_dir: str | os.PathLike[str] | None = None,
    prompt_sha256: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> JudgeBatch:
    """Judge every request once (cache first), concurrently; never raises for judge-side errors. `metadata`: the task's,
    for what a command handed over (`Handed`): recorded replies (nothing is sent; a missing one fails its request) and the
    preflight before the first request sent."""
    keys = [str(r.key) for r in requests]
    if len(set(keys)) != len(keys):
        duplicates = sorted({k for k in keys if keys.count(k) > 1})[:5]
        raise ValueError(f"judge_batch({task!r}): request keys must be unique; duplicated: {duplicates}")
    given = handed_to(metadata)
    config = config or JudgeConfig.for_task(task, metadata)
    replay = given.replies
    payloads = {str(r.key): request_payload(config, r) for r in requests}
    by_key = {str(r.key): r for r in requests}
    memo = {"task": task, "replay": None if replay is None else [replay.source, replay.model, dict(replay.replies)]}
    memo.update(endpoint=[config.base_url, config.api_version], parse=_callable_name(parse), prompt_sha256=prompt_sha256)
    memo.update(output_dir=str(output_dir) if output_dir else None, requests=[[k, payloads[k], r.meta] for k, r in zip(keys, requests)])
    memo_key = content_key(memo)
    with _memo_lock:
        memoized = _memo.get(memo_key)
    if memoized is not None:
        return memoized

    started = time.monotonic()
    cache = DiskCache(config.cache_dir) if replay is None else None
    outcomes: dict[str, JudgeOutcome] = {}
    cache_keys: dict[str, str] = {}
    parse_errors: dict[str, str] = {}
    pending: list[str] = []
    followers: dict[str, list[str]] = {}  # identical requests in one batch: one call, shared reply
    leaders: dict[str, str] = {}
    for request in requests:
        key = str(request.key)
        outcome = JudgeOutcome(key=key, meta=dict(request.meta))
        outcomes[key] = outcome
        cache_keys[key] = cache_key(payloads[key])
        if replay is not None:  # recorded replies: nothing is sent, nothing is cached
            if key in replay.replies:
                outcome.content, outcome.cached = str(replay.replies[key]), True
            else:
                outcome.error = f"no recorded judge reply in {replay.source}"
            continue
        hit = cache.get(cache_keys[key])
        if hit is not None and isinstance(hit.get("content"), str):
            outcome.content, outcome.cached = hit["content"], True
            outcome.usage = dict(hit.get("usage") or {})
            outcome.finish_reason = hit.get("finish_reason")
        elif cache_keys[key] in leaders:
            followers.setdefault(leaders[cache_keys[key]], []).append(key)
        else:
            leaders[cache_keys[key]] = key
            pending.append(key)

    provider: list[JudgeProvider | str] = []  # built once, before the pool; a failure fails every request sent

    def call(key: str) -> dict[str, Any] | None:
        outcome = outcomes[key]
        try:
            if isinstance(provider[0], str):
                outcome.error = provider[0]
                return None
            response = provider[0].evaluate(by_key[key])
        except Exception as exc:  # noqa: BLE001 - an unexpected bug fails this item, never the batch
            outcome.error = redact(f"internal error: {type(exc).__name__}: {exc}", [config.api_key])
            return None
        outcome.attempts, outcome.error = response.attempts, response.error_message
        if not response.success:
            return None
        tokens = response.usage
        log_usage(model_name=config.model, task_name=task, input_tokens=tokens["input_tokens"], output_tokens=tokens["output_tokens"], source="judge")
        reply = {"content": response.content, "finish_reason": response.finish_reason, "usage": tokens, "model_used": response.model_used}
        return {**reply, "request": payloads[key], "created": time.time()}

    def run_one(key: str) -> None:
        # Claimed across processes: a concurrent run sharing this cache that is already judging the same
        # request is waited for, not paid twice (a killed holder's claim is released by the kernel).
        entry, from_cache = compute_once(cache, cache_keys[key], lambda: call(key), wait=_claim_wait(config))
        if entry is not None and isinstance(entry.get("content"), str):
            outcome = outcomes[key]
            outcome.content, outcome.finish_reason, outcome.cached = entry["content"], entry.get("finish_reason"), from_cache
            outcome.usage = dict(entry.get("usage") or {})
            outcome.error = None

    if pending and given.check_first:
        check_judge(config)
    if pending:
        try:
            provider.append(JudgeProvider(config))
        except Exception as exc:  # noqa: BLE001 - a client that cannot be built fails every request, not the run
            provider.append(redact(f"cannot create judge client: {type(exc).__name__}: {exc}", [config.api_key]))
        logger.info(
            f"judge {task}: {len(pending)} request(s) to {config.model} at {config.endpoint_host} "
            f"({len(requests) - len(pending)} cached), concurrency {config.concurrency}"
        )
        _run_pool(config, task, pending, run_one)
    for leader, keys in followers.items():
        for key in keys:
            source, outcome = outcomes[leader], outcomes[key]
            outcome.content, outcome.error, outcome.attempts = source.content, source.error, source.attempts
            outcome.finish_reason, outcome.cached = source.finish_reason, source.error is None

    for key, outcome in outcomes.items():
        if outcome.content is not None:
            outcome.parsed, error = _parse(parse, outcome.content, key)
            if error:
                parse_errors[key] = error
    wall = time.monotonic() - started
    summary = _summary(task, config, outcomes, prompt_sha256, wall)
    if replay is not None:
        summary.update(judge_model=replay.model, endpoint_host=replay.source, base_url=None, cache_dir=None, replayed_from=replay.source)
    batch = JudgeBatch(task=task, outcomes=outcomes, summary=summary)
    try:
        batch.records_path = _write_records(records_dir(config, output_dir), task, config, batch, cache_keys, parse_errors)
    except OSError as exc:
        logger.error(f"judge {task}: could not write judgement records: {exc}")
    if batch.n_failed:
        run_status.record_incomplete(task, failure_line(batch, config))
    with _memo_lock:
        _memo[memo_key] = batch
    return batch


def failure_line(batch: JudgeBatch, config: JudgeConfig) -> str:
    """One line for a batch with failed requests: the count, the first failure's reason and the records holding every
    failure; judging again is advised only where it can help (not for a 4xx other than 408/409/429)."""
    failed = [o for o in batch.outcomes.values() if o.error]
    first = failed[0]
    where = f"every failure is in {batch.records_path}" if batch.records_path else "the judgement records could not be written"
    status = re.match(r"HTTP (\d{3})\b", first.error or "")
    refused = status is not None and 400 <= int(status.group(1)) < 500 and int(status.group(1)) not in RETRYABLE_STATUS
    advice = HELP["rescore"]
    if refused:
        advice = f"the judge {config.model} at {config.endpoint} refuses these requests: fix its settings ({HELP['judge_docs']}) before judging again"
    head = f"{len(failed)}/{len(batch.outcomes)} judge request(s) failed after retries, the first ({first.key!r})"
    return f"{head}: {_one_line(first.error or '', 200)}; {where}; {advice}"


def _claim_wait(config: JudgeConfig) -> float:
    """How long to wait for another process judging the same request before judging it here: its longest
    legitimate run (every attempt timing out, every backoff at its cap) plus a minute."""
    return config.timeout * (config.max_retries + 1) + config.backoff_max * config.max_retries + 60.0


def _run_pool(config: JudgeConfig, task: str, pending: list[str], run_one: Callable[[str], None]) -> None:
    """Run every pending request on `concurrency` threads; workers tick the progress bar themselves, so
    the calling thread sleeps until the end instead of waking once per reply (which costs CPU at 128)."""
    from tqdm.auto import tqdm

    workers = max(1, min(config.concurrency, len(pending)))
    bar = tqdm(total=len(pending), desc=f"judge {task}", unit="req", file=sys.stderr, disable=not config.progress, mininterval=0.5)
    bar_lock = threading.Lock()

    def work(key: str) -> None:
        try:
            run_one(key)
        finally:
            with bar_lock:
                bar.update(1)

    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="judge")
    try:
        with bar:
            futures = [pool.submit(work, key) for key in pending]
            wait(futures)
            for future in futures:
                future.result()  # run_one turns every error into outcome.error; anything else is a bug
    except KeyboardInterrupt as exc:
        # Ctrl-C: stop at once; finished replies are already in the cache, the rest re-run next time. The requests
        # in flight are abandoned, not waited for: the command's interrupt handling ends the process without joining
        # these threads, and a killed claim is released by the kernel.
        pool.shutdown(wait=False, cancel_futures=True)
        raise JudgingInterrupted(
            f"judging {task} was interrupted: the judge replies received so far are kept in the judge cache "
            f"({Path(config.cache_dir).expanduser()}), and the same command resumes from it"
        ) from exc
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


class JudgingInterrupted(KeyboardInterrupt):
    """Ctrl-C while judging: its message says what was kept and how to resume."""


def _summary(task: str, config: JudgeConfig, outcomes: Mapping[str, JudgeOutcome], prompt_sha256: str | None, wall: float) -> dict[str, Any]:
    fresh = [o for o in outcomes.values() if not o.cached and o.error is None]
    cached = [o for o in outcomes.values() if o.cached]
    params = {k: v for k, v in request_payload(config, JudgeRequest(messages=[])).items() if k not in ("model", "messages")}
    # base_url, api_version and cache_dir: what re-scoring from the samples file needs to reuse this judge (never the key)
    summary = {"task": task, "judge_model": config.model, "endpoint_host": config.endpoint_host, "base_url": public_url(config.base_url)}
    summary.update(api_version=config.api_version, cache_dir=str(Path(config.cache_dir).expanduser().resolve()), prompt_sha256=prompt_sha256)
    summary.update(params=params, requests=len(outcomes), failed=sum(1 for o in outcomes.values() if o.error is not None))
    summary.update(unparsed=sum(1 for o in outcomes.values() if o.error is None and o.parsed is None))
    summary.update(input_tokens=sum(o.usage.get("input_tokens", 0) for o in fresh), output_tokens=sum(o.usage.get("output_tokens", 0) for o in fresh))
    summary.update(cache_hits=len(cached), cached_input_tokens=sum(o.usage.get("input_tokens", 0) for o in cached))
    summary.update(cached_output_tokens=sum(o.usage.get("output_tokens", 0) for o in cached), retries=sum(max(0, o.attempts - 1) for o in outcomes.values()))
    summary.update(concurrency=config.concurrency, wall_s=round(wall, 3))
    return summary


def _write_records(directory: Path, task: str, config: JudgeConfig, batch: JudgeBatch, cache_keys: Mapping[str, str], errors: Mapping[str, str]) -> Path:
    """`<task>.jsonl` (one line per request) and `<task>.summary.json`, each replaced atomically."""
    directory.mkdir(parents=True, exist_ok=True)
    lines = []
    for key, outcome in batch.outcomes.items():
        record = {"task": task, "key": key, "meta": outcome.meta, "judge_model": config.model, "reply": outcome.content}
        record.update(parsed=outcome.parsed, error=outcome.error, parse_error=errors.get(key), attempts=outcome.attempts, cached=outcome.cached)
        usage = outcome.usage
        record.update(finish_reason=outcome.finish_reason, input_tokens=usage.get("input_tokens", 0), output_tokens=usage.get("output_tokens", 0))
        record["cache_key"] = cache_keys[key]
        lines.append(json.dumps(record, ensure_ascii=False, default=str))
    records = directory / f"{task}.jsonl"
    batch.summary["records"] = str(records)
    write_atomic(records, "\n".join(lines) + ("\n" if lines else ""))
    write_atomic(directory / f"{task}.summary.json", json.dumps(batch.summary, ensure_ascii=False, indent=2, default=str) + "\n")
    return records


def add_to_summary(batch: JudgeBatch, fields: Mapping[str, Any]) -> None:
    """Add fields (e.g. a benchmark's per-category scores) to the batch's summary and rewrite
    `<task>.summary.json` beside its records; nothing to rewrite when the records were not written."""
    batch.summary.update(fields)
    if batch.records_path is None:
        return
    try:
        write_atomic(batch.records_path.with_name(f"{batch.task}.summary.json"), json.dumps(batch.summary, ensure_ascii=False, indent=2, default=str) + "\n")
    except OSError as exc:
        logger.error(f"judge {batch.task}: could not update the judgement summary: {exc}")


# -- results ----------------------------------------------------------------------------------------------


def judge_summary_metric(batch: JudgeBatch) -> str:
    """One-line judge provenance for a `judge_info` metric (a string: lmms-eval's table prints aggregates verbatim); the
    full summary is in `<output_dir>/judgements/<task>.summary.json`."""
    s = batch.summary
    sha = (s.get("prompt_sha256") or "none")[:12]
    head = f"judge={s['judge_model']}@{s['endpoint_host']} prompt_sha256={sha} n={s['requests']} failed={s['failed']} unparsed={s['unparsed']}"
    return f"{head} cached={s['cache_hits']} tokens_in={s['input_tokens']} tokens_out={s['output_tokens']}"
