"""The stand-in server speaks the OpenAI wire format to the real `openai` client, scripts replies by
content, logs what it received (decoded images included) and injects the faults later tests rely on."""

from __future__ import annotations

import base64
import io
import json
import time
import urllib.error
import urllib.request

import openai
import pytest
from PIL import Image

from lmms_tasks.utils.testing.media import colour_for, make_image
from lmms_tasks.utils.testing.openai_server import StandInServer


def _client(server: StandInServer, timeout: float = 5.0) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="EMPTY", max_retries=0, timeout=timeout)


def _data_url(image: Image.Image, fmt: str = "PNG") -> str:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt)
    return f"data:image/{fmt.lower()};base64," + base64.b64encode(buffer.getvalue()).decode()


def test_scripted_replies_by_content_and_default(stand_in: StandInServer) -> None:
    stand_in.script("capital of France", "Paris").script(lambda r: r.model == "judge", "Score: 1")
    client = _client(stand_in)
    ask = lambda text, model="m": client.chat.completions.create(model=model, messages=[{"role": "user", "content": text}])  # noqa: E731
    assert ask("What is the capital of France?").choices[0].message.content == "Paris"
    assert ask("anything", model="judge").choices[0].message.content == "Score: 1"
    assert ask("unscripted").choices[0].message.content == ""
    assert [r.model for r in stand_in.requests] == ["m", "judge", "m"]


def test_list_reply_cycles_for_repeated_samples(stand_in: StandInServer) -> None:
    stand_in.script("sample me", ["a", "b", "c"])
    client = _client(stand_in)
    got = [client.chat.completions.create(model="m", messages=[{"role": "user", "content": "sample me"}]).choices[0].message.content for _ in range(4)]
    assert got == ["a", "b", "c", "a"]


def test_log_records_messages_images_and_parameters(stand_in: StandInServer) -> None:
    client = _client(stand_in)
    content = [
        {"type": "text", "text": "Describe"},
        {"type": "image_url", "image_url": {"url": _data_url(make_image(3))}},
        {"type": "image_url", "image_url": {"url": _data_url(make_image(7, (40, 30)), "JPEG")}},
    ]
    client.chat.completions.create(
        model="vlm",
        messages=[{"role": "system", "content": "sys"}, {"role": "user", "content": content}],
        temperature=0.2,
        top_p=0.95,
        max_tokens=512,
    )
    (request,) = stand_in.requests
    assert request.roles == ["system", "user"]
    assert request.part_types() == ["text", "text", "image_url", "image_url"]
    assert request.params["temperature"] == 0.2 and request.params["top_p"] == 0.95 and request.params["max_tokens"] == 512
    first, second = request.images
    assert (first.width, first.height, first.mime) == (64, 48, "image/png")
    assert (second.width, second.height, second.mime) == (40, 30, "image/jpeg")
    assert all(abs(a - b) <= 40 for a, b in zip(first.mean_rgb, colour_for(3)))
    assert request.text == "sys\nDescribe"


def test_usage_is_reported(stand_in: StandInServer) -> None:
    stand_in.script("x", "four")
    reply = _client(stand_in).chat.completions.create(model="m", messages=[{"role": "user", "content": "x" * 40}])
    assert reply.usage.prompt_tokens == 10 and reply.usage.completion_tokens == 1


def test_fault_429_carries_retry_after_then_recovers(stand_in: StandInServer) -> None:
    stand_in.script("q", "ok").fault("q", "429", times=2, retry_after=0.25)
    client = _client(stand_in)
    for _ in range(2):
        with pytest.raises(openai.RateLimitError) as info:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "q"}])
        assert info.value.response.headers["retry-after"] == "0.25"
    assert client.chat.completions.create(model="m", messages=[{"role": "user", "content": "q"}]).choices[0].message.content == "ok"
    assert [r.status for r in stand_in.requests] == [429, 429, 200]


def test_fault_counts_are_per_distinct_request(stand_in: StandInServer) -> None:
    stand_in.fault("q", "500", times=1)
    client = _client(stand_in)
    for text in ("q1", "q2"):
        with pytest.raises(openai.InternalServerError):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": text}])
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": text}])
    assert [r.fault for r in stand_in.requests] == ["500", None, "500", None]


def test_fault_malformed_body_and_empty_content(stand_in: StandInServer) -> None:
    stand_in.fault("bad", "malformed", times=None).fault("blank", "empty", times=None)
    request = urllib.request.Request(
        stand_in.base_url + "/chat/completions",
        data=json.dumps({"model": "m", "messages": [{"role": "user", "content": "bad"}]}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        body = response.read()
    with pytest.raises(json.JSONDecodeError):
        json.loads(body)
    reply = _client(stand_in).chat.completions.create(model="m", messages=[{"role": "user", "content": "blank"}])
    assert reply.choices[0].message.content == ""


def test_fault_hang_outlasts_client_timeout() -> None:
    with StandInServer(hang_seconds=5.0) as server:
        server.fault("slow", "hang", times=1)
        started = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            _client(server, timeout=0.5).chat.completions.create(model="m", messages=[{"role": "user", "content": "slow"}])
        assert time.monotonic() - started < 4.5  # the client gave up; the server was still hanging
        assert server.requests[0].fault == "hang"


def test_latency_is_applied_per_request() -> None:
    with StandInServer(latency=0.3) as server:
        started = time.monotonic()
        _client(server).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        assert time.monotonic() - started >= 0.3


def test_unknown_route_and_models_listing(stand_in: StandInServer) -> None:
    with urllib.request.urlopen(stand_in.base_url + "/models", timeout=5) as response:
        assert json.loads(response.read())["data"][0]["id"] == "stand-in"
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(urllib.request.Request(stand_in.base_url + "/nope", data=b"{}"), timeout=5)
    assert info.value.code == 404


def test_strict_server_refuses_unscripted_requests() -> None:
    with StandInServer(default_reply=None) as server:
        with pytest.raises(openai.InternalServerError, match="no scripted reply"):
            _client(server).chat.completions.create(model="m", messages=[{"role": "user", "content": "nobody scripted this"}])
        assert server.requests[0].status == 500
