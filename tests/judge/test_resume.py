"""A judging run killed part-way and restarted repeats only the requests that had not finished."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from lmms_tasks.utils.services.cache import DiskCache
from lmms_tasks.utils.services.llm_judge import judge
from lmms_tasks.utils.services.llm_judge.judge import JudgeConfig, JudgeRequest, judge_batch
from lmms_tasks.utils.testing.e2e import start_interruptible
from lmms_tasks.utils.testing.openai_server import StandInServer

N = 24

SCRIPT = textwrap.dedent(
    f"""
    from lmms_tasks.utils.services.llm_judge.judge import JudgeConfig, JudgeRequest, judge_batch

    config = JudgeConfig.resolve(task="resume_task", default_model="stand-in-judge")
    requests = [JudgeRequest(key=str(i), messages=[{{"role": "user", "content": f"resume item {{i}}"}}]) for i in range({N})]
    judge_batch("resume_task", requests, lambda text: text, config=config)
    """
)


def _cached_texts(cache_dir: Path) -> set[str]:
    texts = set()
    for entry in cache_dir.glob("??/*.json"):
        request = json.loads(entry.read_text(encoding="utf-8"))["request"]
        texts.add(request["messages"][0]["content"])
    return texts


def _start_judging(server: StandInServer, cache_dir: Path, work: Path, replies_before_return: int) -> subprocess.Popen:
    """Start a judging run of N requests in a subprocess (concurrency 2) and return once it has received
    `replies_before_return` replies, so the caller can interrupt it part-way."""
    script = work / "judge_run.py"
    script.write_text(SCRIPT, encoding="utf-8")
    env = {
        **os.environ,
        "LMMS_TASKS_JUDGE_BASE_URL": server.base_url,
        "LMMS_TASKS_JUDGE_API_KEY": "EMPTY",
        "LMMS_TASKS_JUDGE_CONCURRENCY": "2",
        "LMMS_TASKS_JUDGE_CACHE_DIR": str(cache_dir),
        "LMMS_TASKS_JUDGE_PROGRESS": "0",
    }
    proc = start_interruptible([sys.executable, str(script)], env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while sum(1 for r in server.requests if r.reply is not None) < replies_before_return:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"the judging subprocess never got going: {proc.stderr.read().decode()[-2000:]}")
        time.sleep(0.02)
    return proc


def test_killed_run_resumes_with_only_the_missing_requests(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    all_texts = {f"resume item {i}" for i in range(N)}
    with StandInServer(default_reply="ok", latency=0.2) as server:
        proc = _start_judging(server, cache_dir, tmp_path, replies_before_return=6)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL

        done = _cached_texts(cache_dir)
        first_run = [r.text for r in server.requests]
        assert 1 <= len(done) < N and done <= set(first_run)
        # A SIGKILL can land between a reply's temporary file and its rename: that file may remain, but it is never
        # an entry (every `*.json` above parsed whole, and the cache counts only those).
        assert len(DiskCache(cache_dir)) == len(done)

    # The resumed run talks to a fresh server (the cache key never includes the endpoint): a request the killed
    # process had already sent can still reach the first server after the kill, and must not be counted here.
    with StandInServer(default_reply="ok", latency=0.2) as server:
        config = JudgeConfig(model="stand-in-judge", base_url=server.base_url, api_key="EMPTY", concurrency=4, cache_dir=str(cache_dir), progress=False)
        requests = [JudgeRequest(key=str(i), messages=[{"role": "user", "content": f"resume item {i}"}]) for i in range(N)]
        judge.clear_memo()
        batch = judge_batch("resume_task", requests, lambda text: text, config=config)

        second_run = [r.text for r in server.requests]
        assert sorted(second_run) == sorted(all_texts - done)  # each missing request exactly once, nothing else
        assert batch.n_failed == 0 and batch.summary["cache_hits"] == len(done)
        assert all(o.content == "ok" for o in batch.outcomes.values())


def test_interrupt_stops_judging_at_once_and_keeps_finished_replies(tmp_path: Path) -> None:
    """Ctrl-C while judging: queued requests are cancelled (not sent), finished replies stay cached."""
    cache_dir = tmp_path / "cache"
    with StandInServer(default_reply="ok", latency=0.3) as server:
        proc = _start_judging(server, cache_dir, tmp_path, replies_before_return=4)
        proc.send_signal(signal.SIGINT)
        seen_at_interrupt = len(server.requests)
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode != 0 and b"KeyboardInterrupt" in stderr
        assert len(server.requests) <= seen_at_interrupt + 2  # at most one more per worker, never the whole queue
        assert len(server.requests) < N and 4 <= len(_cached_texts(cache_dir)) <= len(server.requests)
