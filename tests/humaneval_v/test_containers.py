"""HumanEval-V where users run it: the real `lmms-eval ... --tasks humaneval_v_v2c` inside an outer bubblewrap that stands
in for a container, built without touching the host: user namespaces refused inside (`--disable-userns`, as Docker's
default seccomp profile does), one /proc entry masked (a bind over /proc/keys, as Docker masks it), /proc/sys read-only.
The outer sandbox shares the host's network (the stand-in server is reachable) and filesystem. Each run is a real
lmms-eval process started inside.

Expected numbers, by hand from the scripted replies (greedy V2C): q1 and q2-2 right, q2 wrong, q3 stopped by the gate
-> pass@1 = 2/4 = 50.0; parse rate = 3/4 programs pass the gate = 75.0."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lmms_tasks.utils.services import sandbox
from lmms_tasks.utils.testing.e2e import STAND_IN_MODEL, lmms_eval_command, offline_env, run_command
from lmms_tasks.utils.testing.fixtures import humaneval_v as fx
from lmms_tasks.utils.testing.openai_server import StandInServer
from lmms_tasks.utils.testing.unhurried import unhurried_site

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

BWRAP, _, REFUSED = sandbox.bubblewrap(None)
if REFUSED:
    pytest.skip(f"bubblewrap cannot build a sandbox on this host, so no container can be simulated: {REFUSED}", allow_module_level=True)

# The outer sandbox: the host's whole filesystem and network; its own user and pid namespaces and a fresh /proc.
OUTER = [BWRAP, "--dev-bind", "/", "/", "--unshare-user", "--unshare-pid", "--proc", "/proc", "--die-with-parent"]
CONTAINERS = {
    "userns-refused": ["--disable-userns"],  # Docker's default seccomp profile, most pods, user.max_user_namespaces=0
    "proc-masked": ["--ro-bind", "/dev/null", "/proc/keys"],  # Docker masks /proc/keys, /proc/timer_list, ...
    "proc-sys-read-only": ["--ro-bind", "/proc/sys", "/proc/sys"],  # Docker mounts /proc/sys read-only
}
RIGHT, WRONG, GATED = ("q1", "q2-2"), ("q2",), ("q3",)


def reply(row: dict[str, Any]) -> str:
    signature = row["function_signature"].splitlines()[0]
    code = {
        RIGHT: row["ground_truth_solution"],
        WRONG: signature + "\n    return None\n",
        GATED: "UNUSED = 1\n" + signature + "\n    return UNUSED\n",  # an unused variable: pylint's gate stops it
    }[next(group for group in (RIGHT, WRONG, GATED) if row["qid"] in group)]
    return f"```python\n{code}```"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Three lmms-eval runs, each in its container: (userns refused, bubblewrap), (userns refused, process level),
    (/proc masked, bubblewrap); the model requests each one made."""
    work = tmp_path_factory.mktemp("hev_containers")
    fixtures = fx.write(work / "data")
    out: dict[str, Any] = {"work": work}
    with StandInServer(default_reply=None) as server:
        for row in fixtures.records[fx.RECORDS_KEY]:
            signature = row["function_signature"].splitlines()[0]
            server.script(lambda r, s=signature: r.model == STAND_IN_MODEL and s in r.text, reply(row))
        for name, container, level in (("refused", "userns-refused", ""), ("process", "userns-refused", "process"), ("masked", "proc-masked", "")):
            extra = {"HUMANEVAL_V_ALLOW_CODE_EXECUTION": "1", "PYTHONPATH": str(unhurried_site(work / "site"))}
            if level:
                extra["HUMANEVAL_V_SANDBOX"] = level
            env = dict(offline_env(server.base_url, work / name, fixtures.env, extra=extra))
            before = len(server.requests)
            command = [*OUTER, *CONTAINERS[container], "--", *lmms_eval_command(["humaneval_v_v2c"], server.base_url, work / name / "out")]
            out[name] = run_command(command, work / name / "out", env=env)
            out[f"{name}_requests"] = len(server.requests) - before
    return out


def last_line(result: Any) -> str:
    return (result.stdout + result.stderr).strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("run", "what", "allow"),
    [("refused", "user namespaces are refused", "seccomp=unconfined"), ("masked", "/proc cannot be mounted", "systempaths=unconfined")],
    ids=["userns-refused", "proc-masked-userns-allowed"],
)
def test_a_refusing_container_stops_the_run_before_any_request_and_names_both_ways(runs: dict[str, Any], run: str, what: str, allow: str) -> None:
    refused = runs[run]
    assert refused.returncode != 0 and refused.results_path is None, refused.stderr[-3000:]
    assert runs[f"{run}_requests"] == 0
    line = last_line(refused)
    assert what in line and "HUMANEVAL_V_SANDBOX=process" in line and allow in line, line


def test_process_level_runs_there_scores_officially_and_records_the_level(runs: dict[str, Any]) -> None:
    process = runs["process"].check()
    assert runs["process_requests"] == 4  # one greedy request per task
    assert process.metric("humaneval_v_v2c", "pass@1") == 50.0  # q1, q2-2 of 4
    assert process.metric("humaneval_v_v2c", "parse_success_rate") == 75.0  # q3 gated
    assert process.results["configs"]["humaneval_v_v2c"]["metadata"]["sandbox"] == "process"
    (records,) = Path(runs["work"] / "process").rglob("executions/humaneval_v_v2c.jsonl")
    rows = [json.loads(line) for line in records.read_text(encoding="utf-8").splitlines()]
    assert {r["sandbox"] for r in rows} == {"process"} and len(rows) == 4
    executed = [r for r in rows if r["qid"] not in GATED]
    assert all(r["confinement"][0] == "level:process" and "no-namespaces" in r["confinement"] for r in executed), executed
    assert "HUMANEVAL_V_SANDBOX=process" in process.stdout + process.stderr  # the warning


PREFLIGHT = "from lmms_tasks.utils.services import sandbox; print(sandbox.preflight('bubblewrap'))"


@pytest.mark.parametrize(("container", "what"), [("proc-masked", "/proc cannot be mounted"), ("proc-sys-read-only", "/proc/sys is read-only"), ("userns-refused", "user namespaces are refused")])
def test_the_preflight_names_what_the_container_refuses(container: str, what: str) -> None:
    """The load-time check itself in each container (a Python process, cheaper than an lmms-eval run)."""
    done = subprocess.run([*OUTER, *CONTAINERS[container], "--", sys.executable, "-c", PREFLIGHT], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert what in done.stdout, done.stdout
