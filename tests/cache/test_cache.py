"""The content-addressed disk cache shared by the judge and the code sandbox."""

from __future__ import annotations

import threading
from pathlib import Path

from lmms_tasks.utils.services.cache import DiskCache, content_key


def test_content_key_is_canonical() -> None:
    assert content_key({"a": 1, "b": [1, "é"]}) == content_key({"b": [1, "é"], "a": 1})
    assert content_key({"a": 1}) != content_key({"a": 2})
    assert len(content_key("x")) == 64


def test_put_get_and_misses(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path / "c")
    key = content_key("request")
    assert cache.get(key) is None and len(cache) == 0
    path = cache.put(key, {"content": "ok", "n": 1})
    assert path == tmp_path / "c" / key[:2] / f"{key}.json"
    assert cache.get(key) == {"content": "ok", "n": 1} and len(cache) == 1
    path.write_text("{truncated", encoding="utf-8")  # e.g. a copy damaged outside our control
    assert cache.get(key) is None
    path.write_text("[1, 2]", encoding="utf-8")
    assert cache.get(key) is None


def test_concurrent_writers_of_one_key_leave_one_whole_entry(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path)
    key = content_key("same")
    payload = {"content": "x" * 200_000}
    threads = [threading.Thread(target=cache.put, args=(key, {**payload, "writer": i})) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    entry = cache.get(key)
    assert entry is not None and entry["content"] == payload["content"] and 0 <= entry["writer"] < 16
    assert [p.name for p in (tmp_path / key[:2]).iterdir()] == [f"{key}.json"]  # no temporary file left behind
