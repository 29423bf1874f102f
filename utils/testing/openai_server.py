"""A local OpenAI-compatible HTTP server that stands in for the model under test and for the judge.

Real sockets on 127.0.0.1 (ephemeral port), real HTTP, the `/v1/chat/completions` wire format the
official `openai` client and lmms-eval's `--model openai` speak. Replies are scripted by request
content; every request is logged (messages, decoded images, sampling parameters); latency and faults
(429 with Retry-After, 500, a 401 echoing the Authorization header, hang past the client timeout, malformed body, empty content) can be
injected per request content so retries of the same request hit the same rule. The judge client's preflight
request (header `X-Lmms-Tasks-Preflight`) is answered "pong" (faults still apply) and logged apart, in
`preflights`, so `requests` holds only the work a run asks for. `served_models` makes the server answer 404
(model not found) for any other model, as OpenAI and vLLM do.
"""

from __future__ import annotations

import base64
import hashlib
import io
import itertools
import json
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from lmms_tasks.utils.services.llm_judge import judge

Reply = str | None | Sequence[str] | Callable[["RecordedRequest"], str]
Matcher = str | Callable[["RecordedRequest"], bool]

PREFLIGHT_HEADER = judge.PREFLIGHT_HEADER.lower()  # request headers are recorded in lower case
EXPORTED_PREFLIGHT_HEADER = (
    "x-lmms-eval-preflight"  # the same header as the code exported to lmms-eval sends it (export-upstream renames it)
)
FAULT_KINDS = ("429", "500", "hang", "malformed", "empty", "disconnect", "401-echo")


@dataclass
class RecordedImage:
    """One image part of a request, decoded so tests can assert on what the model was shown."""

    mime: str
    width: int
    height: int
    sha256: str  # of the decoded pixel data (RGB), stable across PNG/JPEG re-encoding of one image
    mean_rgb: tuple[int, int, int]


@dataclass
class RecordedRequest:
    """What the server received for one chat completion call."""

    index: int
    path: str
    model: str
    messages: list[dict[str, Any]]
    params: dict[str, Any]
    headers: dict[str, str]
    received_at: float
    status: int = 200
    fault: str | None = None
    reply: str | None = None

    @property
    def roles(self) -> list[str]:
        return [m.get("role", "") for m in self.messages]

    @property
    def text(self) -> str:
        """All text parts of all messages, joined by newlines (the thing replies are keyed on)."""
        return "\n".join(text for _, text in self.parts() if text is not None)

    def parts(self) -> list[tuple[str, str | None]]:
        """(role, text-or-None) for every content part in order; None marks an image part."""
        out: list[tuple[str, str | None]] = []
        for message in self.messages:
            content = message.get("content")
            role = message.get("role", "")
            if isinstance(content, str):
                out.append((role, content))
                continue
            for part in content or []:
                if part.get("type") == "text":
                    out.append((role, part.get("text", "")))
                elif part.get("type") in ("image_url", "video_url", "input_image"):
                    out.append((role, None))
        return out

    def part_types(self) -> list[str]:
        """Content part types of the user turns in order, e.g. ['text', 'image_url', 'image_url']."""
        types: list[str] = []
        for message in self.messages:
            content = message.get("content")
            if isinstance(content, list):
                types.extend(part.get("type", "") for part in content)
            elif isinstance(content, str):
                types.append("text")
        return types

    @property
    def images(self) -> list[RecordedImage]:
        images: list[RecordedImage] = []
        for message in self.messages:
            content = message.get("content")
            if not isinstance(content, list):
                continue
            for part in content:
                if part.get("type") == "image_url":
                    url = part["image_url"]["url"] if isinstance(part.get("image_url"), dict) else part.get("image_url")
                    images.append(_decode_image(url))
        return images

    @property
    def content_key(self) -> str:
        """Hash of model + messages: identical requests (retries, repeats) share it."""
        blob = json.dumps({"model": self.model, "messages": self.messages}, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _decode_image(url: str) -> RecordedImage:
    from PIL import Image

    if not url.startswith("data:"):
        return RecordedImage(mime=url, width=0, height=0, sha256="", mean_rgb=(0, 0, 0))
    header, payload = url.split(",", 1)
    mime = header[5:].split(";")[0]
    image = Image.open(io.BytesIO(base64.b64decode(payload))).convert("RGB")
    small = image.resize((1, 1), Image.BOX).getpixel((0, 0))
    return RecordedImage(
        mime=mime,
        width=image.width,
        height=image.height,
        sha256=hashlib.sha256(image.tobytes()).hexdigest(),
        mean_rgb=tuple(int(c) for c in small),  # type: ignore[arg-type]
    )


@dataclass
class _Rule:
    matcher: Matcher
    reply: Reply
    cycle: Any = None  # itertools.cycle over a reply list, shared by all matching requests

    def matches(self, request: RecordedRequest) -> bool:
        if callable(self.matcher):
            return bool(self.matcher(request))
        return self.matcher in request.text

    def render(self, request: RecordedRequest) -> str | None:
        if callable(self.reply):
            return self.reply(request)
        if self.reply is None or isinstance(self.reply, str):
            return self.reply
        return next(self.cycle)


@dataclass
class _Fault:
    matcher: Matcher
    kind: str
    times: int | None  # how many times per distinct request content; None = always
    retry_after: float | None = None
    seen: dict[str, int] = field(default_factory=dict)

    def take(self, request: RecordedRequest) -> bool:
        ok = self.matcher(request) if callable(self.matcher) else self.matcher in request.text
        if not ok:
            return False
        count = self.seen.get(request.content_key, 0)
        if self.times is not None and count >= self.times:
            return False
        self.seen[request.content_key] = count + 1
        return True


class StandInServer:
    """OpenAI-compatible chat server on 127.0.0.1 with scripted replies, a request log and faults.

    Use as a context manager::

        with StandInServer(default_reply="T") as server:
            server.script("How many", "3")
            server.fault("judge me", "429", times=2, retry_after=0.1)
            ... point a client at server.base_url ...
            assert server.requests[0].images[0].width == 64
    """

    def __init__(
        self,
        default_reply: Reply | None = "",
        latency: float = 0.0,
        hang_seconds: float = 30.0,
        log_path: str | None = None,
        port: int = 0,
        model_alias: Callable[[str], str] | None = None,
        served_models: Iterable[str] | None = None,
    ) -> None:
        """`port` 0 takes a free port; `model_alias` maps each request's model name before rules see it (the
        `stand-in` command answers every model but the judge as the scripted model under test)."""
        self._rules: list[_Rule] = []
        self._faults: list[_Fault] = []
        self._lock = threading.Lock()
        self._counter = itertools.count()
        self.default_reply = default_reply
        self.latency = latency
        self.hang_seconds = hang_seconds
        self.log_path = log_path
        self._port = port
        self.model_alias = model_alias
        self.requests: list[RecordedRequest] = []
        self.preflights: list[RecordedRequest] = []  # the judge client's preflight requests, apart from `requests`
        self.served_models = None if served_models is None else frozenset(served_models)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    # -- scripting -------------------------------------------------------------------------------
    def script(self, matcher: Matcher, reply: Reply) -> StandInServer:
        """Answer requests matching `matcher` (substring of the request text, or a predicate).

        A list reply is served in turn to successive matching requests (cycling), which is how
        pass@k samples of one prompt get different answers. Earlier rules win. A `None` reply is sent
        as `"content": null` (what an API returns for a refusal or an empty completion).
        """
        cycle = itertools.cycle(list(reply)) if reply is not None and not isinstance(reply, str) and not callable(reply) else None
        with self._lock:
            self._rules.append(_Rule(matcher, reply, cycle))
        return self

    def script_many(self, rules: Iterable[tuple[Matcher, Reply]]) -> StandInServer:
        for matcher, reply in rules:
            self.script(matcher, reply)
        return self

    def fault(self, matcher: Matcher, kind: str, times: int | None = 1, retry_after: float | None = None) -> StandInServer:
        """Inject a fault for requests matching `matcher`, `times` times per distinct request."""
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; expected one of {FAULT_KINDS}")
        with self._lock:
            self._faults.append(_Fault(matcher, kind, times, retry_after))
        return self

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()
            self._faults.clear()
            self.requests.clear()
            self.preflights.clear()

    # -- lifecycle -------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> StandInServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out in separate writes: no 40 ms delayed-ACK stall

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
                return

            def do_GET(self) -> None:  # noqa: N802 - stdlib naming
                if self.path.rstrip("/").endswith("/models"):
                    listed = sorted(server.served_models) if server.served_models is not None else ["stand-in"]
                    self._send(200, {"object": "list", "data": [{"id": name, "object": "model"} for name in listed]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:  # noqa: N802 - stdlib naming
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    self._send(400, {"error": {"message": "request body is not JSON"}})
                    return
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                server._handle_chat(self, body)

            def _send(self, status: int, payload: Any, raw: bytes | None = None, headers: dict[str, str] | None = None) -> None:
                data = raw if raw is not None else json.dumps(payload, ensure_ascii=False).encode("utf-8")
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in (headers or {}).items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        class Server(ThreadingHTTPServer):
            request_queue_size = 1024  # many concurrent clients (judge benchmarks) must not be refused

        self._httpd = Server(("127.0.0.1", self._port), Handler)
        self._httpd.daemon_threads = True
        # shutdown() waits for the serving loop's next poll: 0.5 s by default, after every test that starts a server
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="stand-in-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> StandInServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- request handling ------------------------------------------------------------------------
    def _handle_chat(self, handler: Any, body: dict[str, Any]) -> None:
        params = {k: v for k, v in body.items() if k not in ("messages", "model")}
        request = RecordedRequest(
            index=next(self._counter),
            path=handler.path,
            model=self.model_alias(str(body.get("model", ""))) if self.model_alias else str(body.get("model", "")),
            messages=body.get("messages") or [],
            params=params,
            headers={k.lower(): v for k, v in handler.headers.items()},
            received_at=time.time(),
        )
        unscripted: str | None = None
        preflight = PREFLIGHT_HEADER in request.headers or EXPORTED_PREFLIGHT_HEADER in request.headers
        # the name the client asked for, before any alias: a real server knows only the names it serves
        unknown_model = self.served_models is not None and str(body.get("model", "")) not in self.served_models
        with self._lock:
            fault = next((f for f in self._faults if f.take(request)), None)
            rule = next((r for r in self._rules if r.matches(request)), None)
            if fault is None and not unknown_model:
                try:
                    reply = "pong" if preflight else rule.render(request) if rule else self._default(request)
                except LookupError as exc:
                    unscripted = str(exc)
            (self.preflights if preflight else self.requests).append(request)
        if self.latency:
            time.sleep(self.latency)
        if unknown_model and fault is None:
            request.status = 404
            message = f"The model `{body.get('model', '')}` does not exist or you do not have access to it."  # the name asked for, not its alias
            handler._send(404, {"error": {"message": message, "type": "invalid_request_error", "code": "model_not_found"}})
        elif unscripted is not None:
            request.status = 500
            handler._send(500, {"error": {"message": unscripted, "type": "unscripted_request"}})
        elif fault is not None:
            request.fault = fault.kind
            self._send_fault(handler, request, fault)
        else:
            request.reply = reply
            handler._send(200, self._completion(request, reply))
        self._append_log(request)

    def _default(self, request: RecordedRequest) -> str:
        if self.default_reply is None:
            raise LookupError(f"no scripted reply for request text: {request.text[:200]!r}")
        if callable(self.default_reply):
            return self.default_reply(request)
        if isinstance(self.default_reply, str):
            return self.default_reply
        return list(self.default_reply)[0]

    def _send_fault(self, handler: Any, request: RecordedRequest, fault: _Fault) -> None:
        if fault.kind == "429":
            request.status = 429
            headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
            handler._send(429, {"error": {"message": "rate limited (injected)", "type": "rate_limit_exceeded"}}, headers=headers)
        elif fault.kind == "401-echo":  # some gateways echo the credentials they refused
            request.status = 401
            auth = request.headers.get("authorization", "")
            handler._send(401, {"error": {"message": f"invalid credentials: Authorization: {auth}", "type": "invalid_request_error"}})
        elif fault.kind == "500":
            request.status = 500
            handler._send(500, {"error": {"message": "server error (injected)", "type": "server_error"}})
        elif fault.kind == "hang":
            request.status = 0
            self._stopping.wait(self.hang_seconds)
            handler._send(200, self._completion(request, ""))
        elif fault.kind == "malformed":
            handler._send(200, None, raw=b'{"id": "chatcmpl-broken", "choices": [ {')
        elif fault.kind == "empty":
            handler._send(200, self._completion(request, ""))
        elif fault.kind == "disconnect":
            request.status = 0
            handler.close_connection = True
            try:
                handler.connection.shutdown(2)
            except OSError:
                pass

    @staticmethod
    def _completion(request: RecordedRequest, text: str | None) -> dict[str, Any]:
        prompt_tokens = max(1, len(request.text) // 4) + 85 * len([p for p in request.part_types() if p == "image_url"])
        completion_tokens = max(1, len(text or "") // 4)
        n = int(request.params.get("n") or 1)
        return {
            "id": f"chatcmpl-standin-{request.index}",
            "object": "chat.completion",
            "created": int(request.received_at),
            "model": request.model or "stand-in",
            "choices": [
                {"index": i, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"} for i in range(n)
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def _append_log(self, request: RecordedRequest) -> None:
        if not self.log_path:
            return
        entry = {
            "index": request.index,
            "model": request.model,
            "params": request.params,
            "text": request.text,
            "part_types": request.part_types(),
            "status": request.status,
            "fault": request.fault,
            "reply": request.reply,
            "preflight": PREFLIGHT_HEADER in request.headers or EXPORTED_PREFLIGHT_HEADER in request.headers,
        }
        with self._lock, open(self.log_path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry, ensure_ascii=False) + "\n")

    # -- queries for tests ---------------------------------------------------------------------------
    def requests_for(self, model: str | None = None, containing: str | None = None) -> list[RecordedRequest]:
        with self._lock:
            found = list(self.requests)
        if model is not None:
            found = [r for r in found if r.model == model]
        if containing is not None:
            found = [r for r in found if containing in r.text]
        return found
