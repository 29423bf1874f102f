"""Judge throughput: 653 requests (HAERAE-Vision's size) against a stand-in judge with 0.5 s latency.

Prints, per concurrency, the judging phase's wall time next to the ideal N x latency / concurrency and
their ratio. The issue's bar: within 1.25x of ideal at 32, within 1.5x at 128. Every run starts from an
empty cache (a cached run makes no call at all) and a fresh server.

    python bench/bench_judge.py                      # concurrency 1, 32 and 128 (1 takes ~5.5 minutes)
    python bench/bench_judge.py --concurrency 32,128
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
import time

from lmms_tasks.utils.services.llm_judge.judge import JudgeConfig, JudgeRequest, clear_memo, judge_batch

SERVER_SCRIPT = """
import http.server, socketserver, sys
http.server.ThreadingHTTPServer.request_queue_size = 1024
socketserver.StreamRequestHandler.disable_nagle_algorithm = True
from lmms_tasks.utils.testing.openai_server import StandInServer
with StandInServer(default_reply="<score>1/2</score>", latency=float(sys.argv[1])) as server:
    print(server.base_url, flush=True)
    sys.stdin.readline()
    print(len(server.requests), flush=True)
"""


def run_once(n: int, latency: float, concurrency: int, progress: bool) -> tuple[float, int, int]:
    """(judging wall seconds, requests the server saw, failed outcomes) for one fresh batch.

    The stand-in server runs in its own process, as a real endpoint would: in this process its handler
    threads would compete with the client's threads for the interpreter lock and inflate the figure.
    A real endpoint also accepts a burst of connections; the stdlib server's default listen backlog (5)
    would drop SYNs of a 128-connection burst and add the kernel's 1 s SYN retransmit, so it is raised.
    And a real endpoint sets TCP_NODELAY: the stdlib server writes headers and body separately, which
    with Nagle's algorithm and the client's delayed ACK adds ~40 ms to every reply.
    """
    server = subprocess.Popen([sys.executable, "-c", SERVER_SCRIPT, str(latency)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        base_url = server.stdout.readline().strip()
        if not base_url.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"the stand-in server process did not start (printed {base_url!r})")
        with tempfile.TemporaryDirectory() as cache:
            config = JudgeConfig(
                model="stand-in-judge",
                base_url=base_url,
                api_key="EMPTY",
                concurrency=concurrency,
                timeout=60.0,
                cache_dir=cache,
                progress=progress,
            )
            requests = [JudgeRequest(key=str(i), messages=[{"role": "user", "content": f"judge item {i}: checklist ..."}]) for i in range(n)]
            # Warm-up, not timed: one request in a throw-away cache, so library imports and client construction
            # (done once per process, long before judging in an lmms-eval run) stay out of the figure.
            with tempfile.TemporaryDirectory() as warm_cache:
                warm = JudgeConfig(**{**config.__dict__, "cache_dir": warm_cache, "progress": False})
                judge_batch("bench_warmup", [JudgeRequest(key="w", messages=[{"role": "user", "content": "warm-up"}])], str, config=warm, output_dir=warm_cache)
            clear_memo()
            started = time.monotonic()
            batch = judge_batch("bench_judge", requests, lambda text: text, config=config, output_dir=cache)
            wall = time.monotonic() - started
        server.stdin.write("done\n")
        server.stdin.flush()
        seen = int(server.stdout.readline().strip() or 0) - 1  # minus the warm-up request
        return wall, seen, batch.n_failed
    finally:
        if server.poll() is None:
            server.kill()
        server.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=653)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--concurrency", default="1,32,128", help="comma-separated list")
    parser.add_argument("--progress", action="store_true", help="show the progress bar")
    args = parser.parse_args()
    print(f"{'concurrency':>11} {'N':>5} {'latency_s':>9} {'wall_s':>8} {'ideal_s':>8} {'ratio':>6} {'waves_s':>8} {'requests':>8} {'failed':>6}")
    for concurrency in [int(c) for c in args.concurrency.split(",") if c.strip()]:
        wall, seen, failed = run_once(args.n, args.latency, concurrency, args.progress)
        ideal = args.n * args.latency / concurrency
        waves = math.ceil(args.n / concurrency) * args.latency  # the floor with whole waves of requests
        print(f"{concurrency:>11} {args.n:>5} {args.latency:>9.2f} {wall:>8.2f} {ideal:>8.2f} {wall / ideal:>6.2f} {waves:>8.2f} {seen:>8} {failed:>6}", flush=True)


if __name__ == "__main__":
    main()
