"""The real lmms-eval CLI over the fixture release, all 9 subtasks in one run (`--tasks vlm2_bench`),
with scripted replies; expected scores are computed here by hand from those replies."""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path

import pytest

from lmms_tasks.utils.commands.report.runs import read_results_file, records_dir
from lmms_tasks.utils.commands.score import rescore
from lmms_tasks.utils.testing.e2e import STAND_IN_JUDGE, STAND_IN_MODEL, offline_env, run_lmms_eval
from lmms_tasks.utils.testing.fixtures import vlm2_bench as fixture
from lmms_tasks.utils.testing.media import colour_for
from lmms_tasks.utils.testing.openai_server import StandInServer

# (subtask, q_id, gt) -> scripted model reply
REPLIES = {
    ("gc_mat", "gcm1", "T"): "T",
    ("gc_mat", "gcm1", "F"): "False",  # parsed F; the exact-match variant fails it
    ("gc_mat", "gcm2", "T"): "True. It is true.",  # two tokens: unparseable
    ("gc_mat", "gcm2", "F"): "F",
    ("gc_mat", "gcm3", "T"): "T",  # singleton group
    ("gc_trk", "gct1", "T"): "T",
    ("gc_trk", "gct1", "F"): "F",
    ("gc_trk", "gct2", "F"): "F",
    ("gc_trk", "gct2", "T"): "T",
    ("oc_cpr", "1_p", "T"): "T",
    ("oc_cpr", "1_n", "F"): "F",
    ("oc_cpr", "2_p", "F"): "T",  # wrong
    ("oc_cpr", "2_n", "T"): "I can't tell",  # "can't" parses as T: right
    ("oc_cpr", "3_p", "T"): "T",  # incomplete pair: not in N
    ("oc_cpr", "oc_4_p", "T"): "T",  # id dropped by the first-underscore split
    ("pc_cpr", "tf_1_p", "T"): "T",
    ("pc_cpr", "tf_1_n", "F"): "F",
    ("pc_cpr", "2_p", "T"): "T",
    ("pc_cpr", "2_n", "F"): "T",  # wrong
    ("pc_cpr", "tf_3_n", "F"): "F",  # incomplete
    ("oc_cnt", "cnt1", 1): "2",  # L=4, off by one from gt 1: 100 * (1 - (1/3) ** 0.1)
    ("oc_cnt", "cnt2", 2): "2",  # 100
    ("oc_cnt", "cnt3", 3): "2 (two)",  # unparseable: excluded
    ("oc_cnt", "cnt4", 2): "5",  # out of range for L=2: excluded
    ("oc_cnt", "cnt5", 2): "two",  # 100 (L defaults to 2)
    ("pc_cnt", "pcnt1", 2): "3",  # L=4, gt 2, off by one: 100 * (1 - 0.5 ** 0.1)
    ("pc_cnt", "pcnt2", 1): "1",
    ("pc_cnt", "pcnt3", 3): "three",
    ("oc_grp", "grp1", "(A) 1 and 2"): "(A)",
    ("oc_grp", "grp2", "(C) 1, 3 and 4"): "Answer: (C)",  # wrong prefix
    ("oc_grp", "grp3", "(B) None"): "(B) None",
    ("pc_grp", "pgrp1", "(D) 1 and 4"): "(D) 1 and 4",
    ("pc_grp", "pgrp2", "(B) 2 and 3"): "(A) or (B)",  # multi-choice: wrong
}
VID_REPLIES = {"UNI_AB_0001": "vid-one-description", "UNI_ABA_0002": "vid-two-description"}
JUDGE_REPLIES = {"vid-one-description": "Score: 1", "vid-two-description": "Score: 1"}

S_OC = 100 * (1 - (1 / 3) ** 0.1)
S_PC = 100 * (1 - 0.5**0.1)
EXPECTED = {
    "vlm2_bench_gc_mat": 100 * 1 / 3,  # groups gcm1 (both ok), gcm2 (p unparsed), gcm3 (singleton)
    "vlm2_bench_gc_trk": 100.0,
    "vlm2_bench_oc_cpr": 50.0,  # pairs 1 (ok) and 2 (p wrong)
    "vlm2_bench_oc_cnt": (S_OC + 100 + 100) / 3,
    "vlm2_bench_oc_grp": 100 * 2 / 3,
    "vlm2_bench_pc_cpr": 50.0,
    "vlm2_bench_pc_cnt": (S_PC + 100 + 100) / 3,
    "vlm2_bench_pc_grp": 50.0,
    "vlm2_bench_pc_vid": (100.0 + 50.0) / 2,  # AB 1/1 -> 100 %, ABA 1/2 -> 50 %
}

# the units of each subtask score (0-100), by hand from the replies above: GC pairs by q_id (gcm2's "T" reply
# is unparseable, gcm3 a singleton), Cpr complete pairs, valid counting answers, grouping questions, and the
# two judged videos weighted n / (2 n_type) = 1 (one per type: AB 100 * 1, ABA 50 * 1)
UNITS = {
    "vlm2_bench_gc_mat": [100.0, 0.0, 0.0],
    "vlm2_bench_gc_trk": [100.0, 100.0],
    "vlm2_bench_oc_cpr": [100.0, 0.0],
    "vlm2_bench_oc_cnt": [S_OC, 100.0, 100.0],
    "vlm2_bench_oc_grp": [100.0, 0.0, 100.0],
    "vlm2_bench_pc_cpr": [100.0, 0.0],
    "vlm2_bench_pc_cnt": [S_PC, 100.0, 100.0],
    "vlm2_bench_pc_grp": [100.0, 0.0],
    "vlm2_bench_pc_vid": [100.0, 50.0],
}


def _se(values) -> float:
    values = list(values)
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1) / len(values))


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values)


def _hashes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


def _close(rgb, index: int, tol: int = 24) -> bool:
    return all(abs(a - b) <= tol for a, b in zip(rgb, colour_for(index)))


@pytest.mark.e2e
def test_all_nine_subtasks_and_groups_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fs = fixture.write(tmp_path / "vlm2")
    with StandInServer(default_reply=None) as server:
        for (subtask, q_id, gt), reply in REPLIES.items():
            server.script(fixture.question_tag(subtask, q_id, gt), reply)
        for vid, reply in VID_REPLIES.items():
            server.script(f"[pc_vid:{vid}]", reply)
        for desc, reply in JUDGE_REPLIES.items():
            server.script(lambda r, d=desc: r.model == STAND_IN_JUDGE and d in r.text, reply)
        env = offline_env(server.base_url, tmp_path, fs.env)
        run = run_lmms_eval("vlm2_bench", server.base_url, tmp_path / "out", env=env, in_process=True).check()
        requests = list(server.requests)
        # `python -m lmms_tasks score` on every saved samples file reproduces every subtask metric
        for key in [k for k in os.environ if k.startswith(("LMMS_TASKS_JUDGE_", "OPENAI_"))]:
            monkeypatch.delenv(key)
        for key in ("LMMS_TASKS_JUDGE_BASE_URL", "LMMS_TASKS_JUDGE_API_KEY", "LMMS_TASKS_JUDGE_MODEL", "LMMS_TASKS_JUDGE_CACHE_DIR"):
            monkeypatch.setenv(key, env[key])
        for task in EXPECTED:
            (samples_file,) = run.results_path.parent.glob(f"*_samples_{task}.jsonl")
            report = rescore(samples_file, output_dir=tmp_path / "rescore")
            assert report["errors"] == {} and report["task"] == task
            for key, value in report["results"].items():
                expected = run.results["results"][task][key]
                assert value == (expected if isinstance(expected, str) else pytest.approx(expected)), (task, key)
        assert len(server.requests) == len(requests)  # the re-score judged from the cache
        # PC-VID again into the same --output_path with --limit 1 (issue 52): a run of its own, with records of its
        # own; nothing the first run wrote changes, and each run reads its own judgements
        before = _hashes(tmp_path / "out")
        again = run_lmms_eval("vlm2_bench_pc_vid", server.base_url, tmp_path / "out", env=env, limit=1, in_process=True).check()
        after = _hashes(tmp_path / "out")
        assert {name: after.get(name) for name in before} == before
        judged = {}
        for key, one in (("first", run), ("again", again)):
            folder = records_dir(read_results_file(one.results_path), "judgements")
            judged[key] = (folder, json.loads((folder / "vlm2_bench_pc_vid.summary.json").read_text(encoding="utf-8"))["requests"])
        assert judged["first"][0] != judged["again"][0] and (judged["first"][1], judged["again"][1]) == (2, 1)

    # per-subtask scores under the common name, and the specific metrics
    for task, expected in EXPECTED.items():
        assert run.metric(task, "vlm2_score") == pytest.approx(expected), task
    assert run.metric("vlm2_bench_gc_mat", "tf_n_pairs") == 3
    assert run.metric("vlm2_bench_gc_mat", "tf_pos_acc") == pytest.approx(200 / 3)
    assert run.metric("vlm2_bench_gc_mat", "gc_exact_pair_acc") == 0.0
    assert run.metric("vlm2_bench_gc_mat", "gc_exact_neg_acc") == pytest.approx(100 / 3)
    assert run.metric("vlm2_bench_oc_cpr", "tf_n_pairs") == 2
    assert run.metric("vlm2_bench_oc_cpr", "tf_neg_acc") == pytest.approx(100.0)
    assert run.metric("vlm2_bench_pc_cpr", "tf_pos_acc") == pytest.approx(100.0)
    assert run.metric("vlm2_bench_oc_cnt", "cnt_strict_score") == pytest.approx((S_OC + 200) / 5)
    assert run.metric("vlm2_bench_oc_cnt", "cnt_acc") == pytest.approx(40.0)
    assert (run.metric("vlm2_bench_oc_cnt", "cnt_n_unparsed"), run.metric("vlm2_bench_oc_cnt", "cnt_n_out_of_range")) == (1, 1)
    assert run.metric("vlm2_bench_pc_vid", "vid_ab_pct") == pytest.approx(100.0)
    assert run.metric("vlm2_bench_pc_vid", "vid_aba_pct") == pytest.approx(50.0)
    assert run.metric("vlm2_bench_pc_vid", "vid_judge_failed") == 0

    # groups: unweighted means of the subtask scores
    s = EXPECTED
    assert run.metric("vlm2_bench_gc", "vlm2_score") == pytest.approx(_mean(s[t] for t in s if "_gc_" in t))
    assert run.metric("vlm2_bench_oc", "vlm2_score") == pytest.approx(_mean(s[t] for t in s if "_oc_" in t))
    assert run.metric("vlm2_bench_pc", "vlm2_score") == pytest.approx(_mean(s[t] for t in s if "_pc_" in t))
    avg9 = _mean(s.values())
    assert run.metric("vlm2_bench", "vlm2_score") == pytest.approx(avg9)
    img8 = [t for t in s if t != "vlm2_bench_pc_vid"]
    assert run.metric("vlm2_bench", "vlm2_img8_score") == pytest.approx(_mean(s[t] for t in img8))
    assert run.metric("vlm2_bench", "vlm2_gap_to_human") == pytest.approx(avg9 - 95.16)
    # exact-match overall: GC-Mat by exact "T"/"F" equality (0 of 3 groups), the other subtasks as parsed
    exact = {**s, "vlm2_bench_gc_mat": 0.0}
    assert run.metric("vlm2_bench", "vlm2_exact_score") == pytest.approx(_mean(exact.values()))
    assert run.metric("vlm2_bench", "vlm2_exact_img8_score") == pytest.approx(_mean(exact[t] for t in img8))
    # ... and only there (group-only metrics); each subtask reports its own exact-mode score as a number
    for task in EXPECTED:
        row = run.results["results"][task]
        assert not {"vlm2_gap_to_human,none", "vlm2_img8_score,none", "vlm2_exact_img8_score,none"} & set(row)
        assert run.metric(task, "vlm2_exact_score") == pytest.approx(exact[task])
    for group in ("vlm2_bench_gc", "vlm2_bench_oc", "vlm2_bench_pc"):
        assert "vlm2_gap_to_human,none" not in run.results["groups"][group]

    # standard errors over the units, on the 0-100 scale: one route, lmms-eval's CLT over the per-sample
    # scores the batch step wrote (`_stderr_clt`); its bootstrap `_stderr` stays N/A for our aggregations, so
    # no second route can come back unnoticed; groups combine the subtasks' as independent
    ses = {task: _se(units) for task, units in UNITS.items()}
    for task, units in UNITS.items():
        assert _mean(units) == pytest.approx(EXPECTED[task]), task
        assert run.metric(task, "vlm2_score_stderr_clt") == pytest.approx(ses[task]), task
        assert run.metric(task, "vlm2_score_stderr") == "N/A", task
        scored = [s["vlm2_score"]["vlm2_score"] for s in run.samples[task] if "score" in s["vlm2_score"]]
        assert sorted(scored) == pytest.approx(sorted(units)), task
    # one scored question per pair, each its own cluster: the clustered form equals the CLT one
    assert run.metric("vlm2_bench_gc_mat", "vlm2_score_stderr_clustered") == pytest.approx(ses["vlm2_bench_gc_mat"])
    gc_mat = {s["vlm2_score"]["q_id"]: s for s in run.samples["vlm2_bench_gc_mat"] if "score" in s["vlm2_score"]}
    assert {q: (s["vlm2_score"]["pair_id"], s["unit_score"]) for q, s in gc_mat.items()} == {"gcm1": ("gcm1", 1.0), "gcm2": ("gcm2", 0.0), "gcm3": ("gcm3", 0.0)}
    assert [s["doc_id"] for s in gc_mat.values()] == [0, 2, 4]  # each pair's first question
    # GC-Mat exact mode: 0 of 3 pairs, no spread
    assert run.metric("vlm2_bench_gc_mat", "vlm2_exact_score_stderr_clt") == pytest.approx(0.0)
    # every accuracy has its own units' CLT: GC-Mat's pairs (1 of 3 correct), the pair accuracy's own items
    assert run.metric("vlm2_bench_gc_mat", "tf_pair_acc_stderr_clt") == pytest.approx(ses["vlm2_bench_gc_mat"])
    assert run.metric("vlm2_bench_gc_mat", "tf_pair_acc_stderr") == "N/A"
    gc = math.sqrt(ses["vlm2_bench_gc_mat"] ** 2 + ses["vlm2_bench_gc_trk"] ** 2) / 2
    assert run.metric("vlm2_bench_gc", "vlm2_score_stderr_clt") == pytest.approx(gc)
    all9 = math.sqrt(sum(se**2 for se in ses.values())) / 9
    assert run.metric("vlm2_bench", "vlm2_score_stderr_clt") == pytest.approx(all9)
    assert run.metric("vlm2_bench", "vlm2_gap_to_human_stderr_clt") == pytest.approx(all9)
    img8 = [se for task, se in ses.items() if task != "vlm2_bench_pc_vid"]
    assert run.metric("vlm2_bench", "vlm2_img8_score_stderr_clt") == pytest.approx(math.sqrt(sum(se**2 for se in img8)) / 8)

    # samples carry the task name and what aggregation needs
    sample = run.samples["vlm2_bench_oc_cnt"][0]["vlm2_score"]
    assert sample["task"] == "vlm2_bench_oc_cnt" and {"doc_index", "q_id", "gt", "response", "image_len"} <= set(sample)

    # each model request carried its record's images in order, then "\n" + question; params as officially
    model_requests = [r for r in requests if r.model == STAND_IN_MODEL]
    assert len(model_requests) == sum(len(rows) for rows in fs.records.values())
    for subtask, rows in fs.records.items():
        for row in rows:
            tag = f"[pc_vid:{row['vid']}]" if subtask == "pc_vid" else fixture.question_tag(subtask, row["q_id"], row["gt_answer"])
            (request,) = [r for r in model_requests if tag in r.text]
            assert request.text == (row["question"] if subtask == "pc_vid" else "\n" + row["question"])
            assert request.params["max_tokens"] == (512 if subtask.startswith("gc") or subtask == "pc_vid" else 2048)
            assert request.params.get("temperature", 0) == 0
            means = [image.mean_rgb for image in request.images]
            if subtask == "pc_vid":
                runs = row["_colours"]
                a, b = runs[0], runs[1]
                expected_frames = [a, a, b, b] if len(runs) == 2 else [a, b, b, a]  # 1 fps, 4-frame minimum
                assert [_close(m, c) for m, c in zip(means, expected_frames)] == [True] * 4 and len(means) == 4, (row["vid"], means)
            else:
                assert len(means) == len(row["_colours"]) and all(_close(m, c) for m, c in zip(means, row["_colours"])), tag
            assert request.part_types()[-1] == "text" and set(request.part_types()[:-1]) == {"image_url"}
    judge_requests = [r for r in requests if r.model == STAND_IN_JUDGE]
    assert len(judge_requests) == 2 and all(r.params.get("max_tokens") == 300 for r in judge_requests)
