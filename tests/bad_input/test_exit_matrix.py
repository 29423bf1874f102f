"""Exit statuses through every way a user starts a run (docs/EXIT_STATUS.md).

Through the `lmms-eval` console script, each of {a judge that answers HTTP 200 with a body that is not JSON, a
judge that rejects the key (its preflight stops the run), a backend error during generation, bad data at load
time, an image lost while requests are built}: the documented status, the outputs kept exactly where the README
says (status 3: results, samples and judgements written; 1 and 4: nothing), and the fault named on one line.
Through `python -m lmms_eval` and `accelerate launch -m lmms_eval` with 2 processes, one fault of each way a
status arises (`ROUTES`): scoring left incomplete (3, the status registry), an error that names its status
(bad data: 1) and an error that does not (the lost image: 4, caught by lmms-eval); the two other faults reach
the status by one of these same ways. `lmms-eval eval ...` (the subcommand form) is checked on one fault too. The console
script runs one fault of each way once more through lmms-eval with our patch series applied (compat switched
off): the statuses are then lmms-eval's own, and must be the same.

Under `accelerate launch` the launcher exits non-zero whenever a rank does (torch's elastic agent reports
the rank's own status); the rank that fails and its status are named in its error report.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from lmms_tasks.utils.services.status import EXIT_DATA, EXIT_FAILED, EXIT_INCOMPLETE
from lmms_tasks.utils.testing import patched
from lmms_tasks.utils.testing.e2e import STAND_IN_JUDGE, RunResult, cli_command, lmms_eval_command, offline_env, run_command
from lmms_tasks.utils.testing.fixtures import haerae_vision as hv_fixture
from lmms_tasks.utils.testing.fixtures import humaneval_v as hev_fixture
from lmms_tasks.utils.testing.fixtures import vlm2_bench as vlm2_fixture
from lmms_tasks.utils.testing.openai_server import StandInServer

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ENTRIES = ("console", "module", "accelerate")


@dataclass
class Outcome:
    run: RunResult
    requests: int  # model requests the stand-in server received


def _rewrite_diagram(shard: Path, row: int, data: bytes) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(shard)
    rows = table.to_pylist()
    rows[row]["diagram"] = {"bytes": data, "path": None}
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), shard)


def judge_garbage(tmp_path: Path, entry: str, tiny_vlm: Path, wrap: Callable[[dict[str, str]], dict[str, str]]) -> Outcome:
    fixtures = hv_fixture.write(tmp_path / "data")
    with StandInServer(default_reply="정답입니다.") as server:
        server.fault(lambda r: r.model == STAND_IN_JUDGE, "malformed", times=None)
        env = wrap(offline_env(server.base_url, tmp_path, fixtures.env, extra={"LMMS_TASKS_JUDGE_MAX_RETRIES": "1", "LMMS_TASKS_JUDGE_BACKOFF": "0.01"}))
        command = lmms_eval_command(["haerae_vision_original"], server.base_url, tmp_path / "out", entry=entry, limit=2)
        run = run_command(command, tmp_path / "out", env=env)
        return Outcome(run, len([r for r in server.requests if r.model != STAND_IN_JUDGE]))


def judge_rejected(tmp_path: Path, entry: str, tiny_vlm: Path, wrap: Callable[[dict[str, str]], dict[str, str]]) -> Outcome:
    """The judge answers 401 to every request: the preflight stops the run before any model request."""
    fixtures = hv_fixture.write(tmp_path / "data")
    with StandInServer(default_reply="정답입니다.") as server:
        server.fault(lambda r: r.model == STAND_IN_JUDGE, "401-echo", times=None)
        env = wrap(offline_env(server.base_url, tmp_path, fixtures.env))
        command = lmms_eval_command(["haerae_vision_original"], server.base_url, tmp_path / "out", entry=entry, limit=2)
        run = run_command(command, tmp_path / "out", env=env)
        assert server.preflights, "the judge was never checked"
        return Outcome(run, len(server.requests))


def backend_error(tmp_path: Path, entry: str, tiny_vlm: Path, wrap: Callable[[dict[str, str]], dict[str, str]]) -> Outcome:
    """The most likely first mistake on a CPU machine: `device=cpu` without `device_map=cpu`."""
    fixtures = hv_fixture.write(tmp_path / "data")
    with StandInServer(default_reply="<score>1/1</score>") as server:
        env = wrap(offline_env(server.base_url, tmp_path, fixtures.env))
        model_args = f"pretrained={tiny_vlm},device=cpu,min_pixels=3136,max_pixels=50176"
        command = cli_command("qwen2_5_vl", model_args, ["haerae_vision_original"], tmp_path / "out", entry=entry, limit=2)
        run = run_command(command, tmp_path / "out", env=env)
        return Outcome(run, 0)


def bad_data(tmp_path: Path, entry: str, tiny_vlm: Path, wrap: Callable[[dict[str, str]], dict[str, str]]) -> Outcome:
    fixtures = hev_fixture.write(tmp_path / "data")
    _rewrite_diagram(fixtures.root / "data/test-00000-of-00001.parquet", 2, b"\x89PNG\r\n\x1a\n" + b"\x00" * 40)
    with StandInServer(default_reply="```python\ndef solution(n):\n    return n\n```") as server:
        env = wrap(offline_env(server.base_url, tmp_path, fixtures.env, extra={"HUMANEVAL_V_ALLOW_CODE_EXECUTION": "1"}))
        run = run_command(lmms_eval_command(["humaneval_v_v2c"], server.base_url, tmp_path / "out", entry=entry), tmp_path / "out", env=env)
        return Outcome(run, len(server.requests))


def image_lost(tmp_path: Path, entry: str, tiny_vlm: Path, wrap: Callable[[dict[str, str]], dict[str, str]]) -> Outcome:
    fixtures = vlm2_fixture.write(tmp_path / "data")
    records = fixtures.records["oc_grp"]
    image_dir = fixtures.root / vlm2_fixture.IMAGE_DIRS["oc"]
    lost: list[dict] = []

    def first_then_delete(request: object) -> str:
        # when the first request arrives, the images of every record not yet sent disappear
        if not lost:
            lost.extend(r for r in records if vlm2_fixture.question_tag("oc_grp", r["q_id"], r["gt_answer"]) not in request.text)
            for record in lost:
                (image_dir / record["images"][0]).unlink()
        return "(A)"

    with StandInServer(default_reply=first_then_delete) as server:
        env = wrap(offline_env(server.base_url, tmp_path, fixtures.env))
        command = lmms_eval_command(["vlm2_bench_oc_grp"], server.base_url, tmp_path / "out", entry=entry, num_concurrent=1)
        run = run_command(command, tmp_path / "out", env=env)
        return Outcome(run, len(server.requests))


@dataclass(frozen=True)
class Fault:
    name: str
    make: Callable[[Path, str, Path, Callable[[dict[str, str]], dict[str, str]]], Outcome]
    status: int
    outputs: bool  # results and samples written
    named: str  # one line naming the fault (a regex)


FAULTS = [
    Fault("judge_garbage", judge_garbage, EXIT_INCOMPLETE, True, r"^  - haerae_vision_original: 2/2 judge request\(s\) failed after retries"),
    Fault(
        "judge_rejected",
        judge_rejected,
        EXIT_DATA,
        False,
        r"Error during evaluation: haerae_vision_original: the judge stand-in-judge at \S+ \(key from LMMS_TASKS_JUDGE_API_KEY\) rejected the key \(HTTP 401",
    ),
    Fault("backend_error", backend_error, EXIT_FAILED, False, r"Error during evaluation: .*(CUDA|NVIDIA|cuda)"),
    Fault("bad_data", bad_data, EXIT_DATA, False, r"Error during evaluation: humaneval_v_v2c: humaneval_v: \S+test-00000-of-00001\.parquet row 2 \(qid='q2-2'\): field 'diagram' "),
    Fault("image_lost", image_lost, EXIT_FAILED, False, r"Error during evaluation: vlm2_bench oc_grp record '\w+': cannot read image \S+oc"),
]


def _check(fault: Fault, entry: str, outcome: Outcome) -> None:
    run = outcome.run
    output = run.stdout + "\n" + run.stderr
    tail = output[-3000:]
    if entry == "accelerate":
        assert run.returncode != 0, tail  # the launch fails...
        assert re.search(rf"exitcode\s*:\s*{fault.status}\b", output), tail  # ...reporting the rank's status
    else:
        assert run.returncode == fault.status, tail
        assert f"lmms-eval: exit status {fault.status}" in run.stderr, tail
    assert re.search(fault.named, output, flags=re.MULTILINE), tail
    if fault.status == EXIT_DATA and entry != "accelerate":  # a named condition: its one line last, no traceback
        assert "Traceback" not in output and "DataError: haerae" not in output, tail
        last = run.stderr.rstrip().splitlines()[-1]
        assert re.search(fault.named.replace("Error during evaluation: ", "^  - ", 1), last), last
    elif fault.status == EXIT_FAILED:
        assert "Traceback" in output, tail  # a bug (or a backend failure) keeps its traceback
    assert "deadlock avoided" not in output and "Could not acquire internal lock" not in output  # no logging inside a sink
    if fault.outputs:
        assert run.results_path is not None and run.samples, tail
        from lmms_tasks.utils.services.records import recorded_dir

        records = recorded_dir(run.results_path, json.loads(run.results_path.read_text(encoding="utf-8")))  # the run's own, as its results file names them
        assert records is not None and (records / "judgements" / "haerae_vision_original.jsonl").is_file()
    else:
        assert run.results_path is None and not list(run.output_dir.rglob("*_samples_*.jsonl")), tail
    if fault.name in ("bad_data", "judge_rejected"):
        assert outcome.requests == 0  # stopped before any model request
        assert "RetryError" not in output  # not retried


# one fault per way a status arises: incomplete scoring, an error naming its status, an error lmms-eval catches
WAYS = [fault for fault in FAULTS if fault.name in ("judge_garbage", "bad_data", "image_lost")]
# (fault, entry): every fault through the console script; through the other entries, one fault per way
ROUTES = [(fault, "console") for fault in FAULTS] + [(fault, entry) for entry in ENTRIES[1:] for fault in WAYS]


@pytest.mark.hf_backend
@pytest.mark.parametrize(("fault", "entry"), ROUTES, ids=[f"{fault.name}-{entry}" for fault, entry in ROUTES])
def test_exit_status_matrix(fault: Fault, entry: str, tmp_path: Path, tiny_vlm: Path) -> None:
    _check(fault, entry, fault.make(tmp_path, entry, tiny_vlm, dict))


@pytest.mark.parametrize("fault", WAYS, ids=lambda f: f.name)
def test_patched_lmms_eval_gives_the_same_statuses(fault: Fault, tmp_path: Path, tiny_vlm: Path, patched_lmms_eval: Path) -> None:
    _check(fault, "console", fault.make(tmp_path, "console", tiny_vlm, lambda env: patched.env(patched_lmms_eval, env)))


@pytest.mark.hf_backend
def test_the_eval_subcommand_exits_like_the_flat_form(tmp_path: Path, tiny_vlm: Path) -> None:
    fault = FAULTS[0]
    _check(fault, "eval", fault.make(tmp_path, "eval", tiny_vlm, dict))


def test_a_clean_run_exits_zero_through_the_console_script(tmp_path: Path) -> None:
    fixtures = vlm2_fixture.write(tmp_path / "data")
    with StandInServer(default_reply="(A)") as server:
        env = offline_env(server.base_url, tmp_path, fixtures.env)
        run = run_command(lmms_eval_command(["vlm2_bench_oc_grp"], server.base_url, tmp_path / "out", entry="console"), tmp_path / "out", env=env)
    run.check()
    assert "exit status" not in run.stderr
    shutil.rmtree(tmp_path / "data")
