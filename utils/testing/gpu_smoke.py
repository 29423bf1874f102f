"""GPU smoke run of the vLLM paths (`scripts/gpu_smoke.sh`): every task of the three benchmarks through
`lmms-eval --model vllm` on the tiny Qwen2.5-VL, with the judge of the judged tasks served by `vllm serve`
on the same model, then a table of what ran.

Needs a CUDA GPU and vLLM (`pip install -e .[vllm]`); nothing is downloaded (the model is built by
`make-tiny-vlm`, the data are the test fixtures). Steps:

1. build the tiny model and the fixtures (VLM2-Bench, two HumanEval-V tasks, HAERAE-Vision);
2. `vllm serve MODEL --served-model-name tiny-judge` on 127.0.0.1 (a share of the GPU), used through
   `LMMS_TASKS_JUDGE_*` by every judged task (VLM2-Bench PC-VID, HAERAE-Vision): the tiny model answers
   "Score: 1 T", which the PC-VID judge parser reads as a score of 1 (HAERAE-Vision's judge parser finds
   no <score> tag: counted as judge failures, as it would for any unparseable judge reply);
3. `lmms-eval --model vllm` with the model args of the README's vLLM commands (`max_new_tokens=1`,
   `limit_mm_per_prompt` from `media-stats --max`) plus `gpu_memory_utilization` and `enforce_eager` (two
   engines share one GPU), `--batch_size 64`, `--limit N`: the first-stage tasks in one run, HumanEval-V's
   second stage (t2c) in a second run reading the first run's descriptions;
4. a Markdown table per task and group: documents, the first metric of the task and its value, and the
   wall time of each run (also written to `<work dir>/gpu_smoke.md`).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from lmms_tasks.utils.testing.backends import format_model_args
from lmms_tasks.utils.testing.e2e import RunResult, cli_command, offline_env, run_command

JUDGE_NAME = "tiny-judge"
HEV_QIDS = ("q1", "q2")
FIRST_STAGE = [
    "vlm2_bench",
    "humaneval_v",
    "humaneval_v_v2c_pass3",
    "humaneval_v_v2c_cot_pass3",
    "humaneval_v_gt_t2c_pass3",
    "humaneval_v_v2t_pass3",
    "haerae_vision",
]
SECOND_STAGE = ["humaneval_v_t2c", "humaneval_v_t2c_pass3"]
GPU_SHARE = 0.3  # of GPU memory for each of the two engines (lmms-eval's and the judge server's)

# Model args beyond lmms-eval's VLLM constructor parameters: forwarded to `vllm.LLM(**kwargs)`. Checked by
# tests/backends/test_backend_args.py against the backend code, and against vLLM's EngineArgs where vLLM
# is installed.
VLLM_ENGINE_ARGS = ("limit_mm_per_prompt", "enforce_eager", "max_model_len", "mm_processor_kwargs", "dtype")


def vllm_model_args(model: str, max_images: int) -> dict[str, str]:
    """The README's vLLM model args for `model`, plus the smoke run's GPU sharing."""
    return {
        "model": model,
        "max_new_tokens": "1",
        "limit_mm_per_prompt": json.dumps({"image": max_images}, separators=(",", ":")),
        "gpu_memory_utilization": str(GPU_SHARE),
        "enforce_eager": "True",
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_server(url: str, process: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"vllm serve exited with {process.returncode} before answering {url}")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(2)
    raise RuntimeError(f"vllm serve did not answer {url} within {timeout:.0f} s")


def _first_metric(results: dict[str, Any], name: str) -> tuple[str, Any]:
    section = results.get("results", {}).get(name) or results.get("groups", {}).get(name) or {}
    config = results.get("configs", {}).get(name)
    if config:
        metric = config["metric_list"][0]["metric"]
        filters = [f["name"] for f in config.get("filter_list") or []] or ["none"]
        key = f"{metric},{filters[0]}"
        if key in section:
            return key, section[key]
    keys = sorted(k for k in section if "," in k and "_stderr" not in k)
    return (keys[0], section[keys[0]]) if keys else ("-", "-")


def table(runs: list[tuple[str, RunResult, float]]) -> str:
    lines = ["| run | task / group | docs | metric | value | run wall time |", "|---|---|---|---|---|---|"]
    for label, result, seconds in runs:
        results = result.results
        names = sorted(results.get("results", {})) + sorted(results.get("groups", {}))
        for name in names:
            docs = results.get("n-samples", {}).get(name, {}).get("effective", "")
            key, value = _first_metric(results, name)
            shown = f"{value:.4g}" if isinstance(value, float) else str(value)
            lines.append(f"| {label} | {name} | {docs} | {key} | {shown[:80]} | {seconds:.0f} s |")
    return "\n".join(lines)


def run_smoke(work: Path, limit: int, server_timeout: float) -> str:
    from lmms_tasks.utils.commands.media_stats import media_stats
    from lmms_tasks.utils.testing.fixtures import haerae_vision, humaneval_v, vlm2_bench
    from lmms_tasks.utils.testing.tiny_vlm import build

    model = build(work / "tiny-qwen2.5-vl")
    data_env: dict[str, str] = {}
    data_env.update(vlm2_bench.write(work / "data" / "vlm2_bench").env)
    data_env.update(humaneval_v.write(work / "data" / "humaneval_v", qids=HEV_QIDS).env)
    data_env.update(haerae_vision.write(work / "data" / "haerae_vision").env)
    os.environ.update(data_env)
    os.environ["HUMANEVAL_V_ALLOW_CODE_EXECUTION"] = "1"  # media_stats loads the tasks; they refuse without it
    max_images = max(s.max_images for s in media_stats(FIRST_STAGE, limit))
    port = _free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    serve = [shutil.which("vllm") or "vllm", "serve", str(model), "--served-model-name", JUDGE_NAME, "--host", "127.0.0.1", "--port", str(port)]
    serve += ["--gpu-memory-utilization", str(GPU_SHARE), "--enforce-eager"]
    log = open(work / "vllm_serve.log", "w", encoding="utf-8")  # noqa: SIM115 (closed in finally)
    server = subprocess.Popen(serve, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    runs: list[tuple[str, RunResult, float]] = []
    try:
        _wait_for_server(f"{base_url}/models", server, server_timeout)
        env = offline_env(base_url, work, data_env, judge_model=JUDGE_NAME, extra={"HUMANEVAL_V_ALLOW_CODE_EXECUTION": "1"})
        model_args = format_model_args(vllm_model_args(str(model), max_images))
        stages = [("vllm stage 1", FIRST_STAGE, limit, None), ("vllm stage 2 (t2c)", SECOND_STAGE, None, work / "stage1")]
        for (label, tasks, stage_limit, descriptions), out in zip(stages, ("stage1", "stage2")):
            stage_env = dict(env)
            if descriptions is not None:
                stage_env["HUMANEVAL_V_DESCRIPTIONS"] = str(descriptions)
            command = cli_command("vllm", model_args, tasks, work / out, limit=stage_limit, extra_args=["--batch_size", "64"])
            print(f"\n$ {' '.join(command)}", flush=True)
            started = time.monotonic()
            result = run_command(command, work / out, env=stage_env, timeout=3600).check()
            runs.append((label, result, time.monotonic() - started))
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
    text = table(runs)
    summaries = sorted(runs[0][1].output_dir.rglob("judgements/vlm2_bench_pc_vid.summary.json"))
    judge = json.loads(summaries[-1].read_text(encoding="utf-8")).get("judge_info", "-") if summaries else "-"
    text += f"\n\nPC-VID judge (vllm serve, same model): {judge}"
    (work / "gpu_smoke.md").write_text(text + "\n", encoding="utf-8")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/gpu_smoke.sh", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work-dir", type=Path, default=None, help="keep model, data, results and logs here (default: a new temporary directory)")
    parser.add_argument("--limit", type=int, default=2, help="documents per first-stage task (default 2)")
    parser.add_argument("--server-timeout", type=float, default=900, help="seconds to wait for `vllm serve` to come up")
    args = parser.parse_args(argv)
    if importlib.util.find_spec("vllm") is None:
        print("gpu_smoke: vLLM is not installed (pip install -e .[vllm]); it also needs a CUDA GPU.", file=sys.stderr)
        return 2
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="lmms_tasks_gpu_smoke_"))
    work.mkdir(parents=True, exist_ok=True)
    print(run_smoke(work, args.limit, args.server_timeout))
    print(f"\n(work directory: {work})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
