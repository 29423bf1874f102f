"""End-to-end (real CLI, `--tasks vlm2_bench`, in the session's two-model demo): PC-VID with no standard error and a question type with no
judged video. The judge scores the AB video and answers the ABA one without a score: PC-VID has one judged
video (no variance estimate: its `vlm2_score_stderr_clt` is N/A), yet `vlm2_img8_score_stderr_clt`, a mean over the
eight image subtasks that leaves PC-VID out, is computed from those eight; the ABA type, with none judged,
is named with its counts instead of reading as a plain 0. That is the demo's second model (`script_demo_second_model`,
whose rules win over the first model's), so its run of the demo's first stage is this run: no lmms-eval run of its own."""

from __future__ import annotations

import math

import pytest

from lmms_tasks.utils.testing.demo import DEMO_MODELS

pytestmark = pytest.mark.e2e

IMAGE_TASKS = [f"vlm2_bench_{s}" for s in ("gc_mat", "gc_trk", "oc_cpr", "pc_cpr", "oc_cnt", "pc_cnt", "oc_grp", "pc_grp")]


@pytest.fixture(scope="module")
def run(demo_two_models):  # noqa: ANN001, ANN201
    """The demo's second model on `vlm2_bench` (with the other benchmarks' first stage in the same run): spread in
    every image subtask; the judge scores the AB description and answers the ABA one without a score."""
    _, demo = demo_two_models
    (run,) = [run for run in demo.runs_of(DEMO_MODELS[1]) if "vlm2_bench" in run.results.get("groups", {})]
    assert run.results["config"]["model_args"].startswith(f"model_version={DEMO_MODELS[1]},")
    return run


def test_pc_vid_has_no_standard_error(run) -> None:  # noqa: ANN001
    assert run.metric("vlm2_bench_pc_vid", "vid_n_ab") == 1 and run.metric("vlm2_bench_pc_vid", "vid_n_aba") == 0
    assert run.metric("vlm2_bench_pc_vid", "vid_judge_unparsed") == 1
    assert run.metric("vlm2_bench_pc_vid", "vlm2_score_stderr_clt") == "N/A"
    assert run.metric("vlm2_bench", "vlm2_score_stderr_clt") == "N/A"  # the 9-subtask mean includes PC-VID


def test_img8_standard_error_is_computed_from_the_eight_image_subtasks(run) -> None:  # noqa: ANN001
    ses = [run.metric(task, "vlm2_score_stderr_clt") for task in IMAGE_TASKS]
    assert all(isinstance(se, float) for se in ses), ses
    assert run.metric("vlm2_bench", "vlm2_img8_score_stderr_clt") == pytest.approx(math.sqrt(sum(se**2 for se in ses)) / 8)


def test_a_type_with_no_judged_video_is_named_with_its_counts(run) -> None:  # noqa: ANN001
    assert run.metric("vlm2_bench_pc_vid", "vid_aba_pct") == 0.0  # the official value of an empty type...
    lines = [line for line in (run.stdout + run.stderr).splitlines() if "vlm2_bench_pc_vid: no ABA video was judged" in line]
    assert len(lines) == 1 and "(0 of 1: 1 unparsed, 0 failed)" in lines[0] and "vid_n_aba = 0" in lines[0]  # ...said to be one
    assert not [line for line in (run.stdout + run.stderr).splitlines() if "no AB video was judged" in line]
