"""Runs sharing one judge cache pay each distinct judge request once; a killed run never blocks the next.

Each scorer is a separate Python process calling `judge_batch` (what every judged task's aggregation and
`python -m lmms_tasks score` call), released together by a file barrier so that their batches overlap."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from lmms_tasks.utils.services.cache import DiskCache, compute_once
from lmms_tasks.utils.testing.openai_server import StandInServer

SCORER = r"""
import json, os, sys, time
from lmms_tasks.utils.services.llm_judge import judge
barrier = sys.argv[1]
while not os.path.exists(barrier):
    time.sleep(0.01)
config = judge.JudgeConfig(model="stand-in-judge", base_url=os.environ["BASE_URL"], api_key="EMPTY", concurrency=4,
                           max_retries=0, cache_dir=os.environ["CACHE_DIR"], progress=False)
requests = [judge.JudgeRequest(key=str(i), messages=[{"role": "user", "content": f"judge item {i}"}]) for i in range(int(os.environ["N"]))]
batch = judge.judge_batch("shared_cache_test", requests, parse=str, config=config, output_dir=os.environ["OUT"])
print(json.dumps({k: [o.content, o.cached, o.error] for k, o in batch.outcomes.items()}))
"""


def start_scorer(base_url: str, cache_dir: Path, out: Path, barrier: Path, n: int) -> subprocess.Popen[str]:
    env = {**os.environ, "BASE_URL": base_url, "CACHE_DIR": str(cache_dir), "OUT": str(out), "N": str(n)}
    return subprocess.Popen([sys.executable, "-c", SCORER, str(barrier)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_concurrent_scorers_make_each_call_once(tmp_path: Path) -> None:
    n = 12
    with StandInServer(default_reply=lambda r: f"<score>1/2</score> {r.text}", latency=0.3) as server:
        barrier = tmp_path / "go"
        scorers = [start_scorer(server.base_url, tmp_path / "cache", tmp_path / f"out{i}", barrier, n) for i in range(2)]
        time.sleep(1.0)  # both interpreters up and waiting
        barrier.touch()
        outputs = [json.loads(p.communicate(timeout=120)[0].strip().splitlines()[-1]) for p in scorers]
        texts = sorted(r.text for r in server.requests)
    assert all(p.returncode == 0 for p in scorers)
    assert texts == sorted(f"judge item {i}" for i in range(n))  # 12 distinct requests, 12 calls, not 24
    for output in outputs:
        assert {k: v[0] for k, v in output.items()} == {str(i): f"<score>1/2</score> judge item {i}" for i in range(n)}
        assert all(v[2] is None for v in output.values())
    # each call was made by exactly one of them; the other read its reply from the cache
    paid = [sum(not cached for _, cached, _ in output.values()) for output in outputs]
    assert sum(paid) == n


def test_a_killed_scorer_never_blocks_the_next(tmp_path: Path) -> None:
    n = 3
    slow = threading.Event()
    slow.set()
    with StandInServer(default_reply="<score>1/1</score>", hang_seconds=60) as server:
        # the first scorer's requests never finish: it is killed while holding its claims
        server.fault(lambda r: slow.is_set(), "hang", times=None)
        barrier = tmp_path / "go"
        barrier.touch()
        first = start_scorer(server.base_url, tmp_path / "cache", tmp_path / "out1", barrier, n)
        deadline = time.monotonic() + 60
        while len(server.requests) < n and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(server.requests) == n  # every request claimed and in flight
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        slow.clear()
        second = start_scorer(server.base_url, tmp_path / "cache", tmp_path / "out2", barrier, n)
        # it would wait for a live holder up to the judge's timeout budget (tens of minutes); a dead one's
        # claim is released by the kernel, so it judges at once
        output = json.loads(second.communicate(timeout=120)[0].strip().splitlines()[-1])
    assert second.returncode == 0
    assert {k: v[0] for k, v in output.items()} == {str(i): "<score>1/1</score>" for i in range(n)}
    assert len(server.requests) == 2 * n


def test_compute_once_waits_for_the_holder_then_reads_its_entry(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path)
    calls: list[str] = []
    entered = threading.Event()
    release = threading.Event()

    def slow_compute() -> dict:
        calls.append("slow")
        entered.set()
        release.wait(10)
        return {"content": "from the holder"}

    holder = threading.Thread(target=lambda: compute_once(cache, "k" * 64, slow_compute, wait=60, poll=0.01))
    holder.start()
    entered.wait(10)
    result: list = []
    waiter = threading.Thread(target=lambda: result.append(compute_once(cache, "k" * 64, lambda: calls.append("fast") or {"content": "x"}, wait=60, poll=0.01)))
    waiter.start()
    time.sleep(0.2)
    release.set()
    holder.join(10)
    waiter.join(10)
    assert calls == ["slow"] and result == [({"content": "from the holder"}, True)]
    # a failed holder (None) stores nothing: the claim passes on and the next caller computes
    assert compute_once(cache, "f" * 64, lambda: None, wait=1) == (None, False)
    assert compute_once(cache, "f" * 64, lambda: {"content": "second try"}, wait=1) == ({"content": "second try"}, False)
    assert not list(tmp_path.rglob("*.inflight"))  # claims are removed when released
