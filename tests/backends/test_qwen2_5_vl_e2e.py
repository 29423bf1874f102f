"""Every task and group of the three benchmarks through lmms-eval's real Hugging Face backend
(`--model qwen2_5_vl`, its chat class) on the tiny Qwen2.5-VL, on CPU, with exactly the model args of the
README's per-benchmark `qwen2_5_vl` commands plus `device=cpu,device_map=cpu`, in one process and in two.

Runs (the stand-in server is only the judge and HumanEval-V's strong coder; the model is real):
  A  1 process : the README's first-stage commands (vlm2_bench; humaneval_v and the pass@3 variants;
                 haerae_vision), batched into one invocation
  B  1 process : HumanEval-V's second stage (t2c, t2c_pass3), reading A's descriptions
  C  2 processes (`accelerate launch --num_processes 2`): A's and B's tasks in one invocation, the second
                 stage reading A's descriptions (the tiny model describes every diagram the same way in
                 every run; `test_two_processes_...` checks C's own v2t samples equal A's)
A and B run through lmms-eval's CLI entry in the test's process (`e2e.run_in_process`), C as the command.

Every `model.generate` call of every run is traced (`lmms_tasks.utils.testing.generate_trace`): the
prompt token ids, the vision placeholder tokens, `image_grid_thw`, the images' mean colours as the model saw
them, and the generation kwargs. The fixtures: the full VLM2-Bench and HAERAE-Vision fixture sets and two
HumanEval-V tasks (pass@3 tasks sample 6 times per task).
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from lmms_tasks.utils.testing import generate_trace
from lmms_tasks.utils.testing.backends import CPU_DEVICE_ARGS, HF_MARK, readme_commands, with_model_args
from lmms_tasks.utils.testing.e2e import STAND_IN_JUDGE, RunResult, cli_command, offline_env, run_command, run_in_process
from lmms_tasks.utils.testing.fixtures import haerae_vision as haerae_fx
from lmms_tasks.utils.testing.fixtures import humaneval_v as hev_fx
from lmms_tasks.utils.testing.fixtures import vlm2_bench as vlm2_fx
from lmms_tasks.utils.testing.media import colour_for
from lmms_tasks.utils.testing.openai_server import StandInServer
from lmms_tasks.utils.testing.tiny_vlm import DEFAULT_SYSTEM_PROMPT, REPLY
from lmms_tasks.utils.vlm2_bench.video import sample_frames, smart_resize

pytestmark = [pytest.mark.e2e, pytest.mark.hf_backend, pytest.mark.slow]

README = Path(__file__).resolve().parents[2] / "README.md"
HEV_QIDS = ("q1", "q2")
HAERAE_SYSTEM = "You are a helpful math assistant. Answer precisely in Korean if the prompt is Korean."
T2C_MARK = "**Problem Specification:**"
# qwen_vl_utils' and the README's pixel limits (the processor then keeps the size qwen_vl_utils chose)
MIN_PIXELS, MAX_PIXELS = 3136, 12845056
COLOUR_TOLERANCE = 24  # the drawn index digit darkens a fixture image's mean a little


# -- the runs --------------------------------------------------------------------------------------------


def _readme_hf_commands() -> list:
    return readme_commands(README, mark=HF_MARK)


def _script_judge(server: StandInServer) -> None:
    """Judge and strong-coder replies (scores worked out by hand in test_hand_computed_metrics)."""
    q1 = next(r for r in hev_fx.records() if r["qid"] == "q1")
    right = f"```python\n{q1['ground_truth_solution']}```"
    sig_q1 = q1["function_signature"].splitlines()[0]
    server.script(lambda r: r.model == STAND_IN_JUDGE and T2C_MARK in r.text and sig_q1 in r.text, right)
    server.script(lambda r: r.model == STAND_IN_JUDGE and T2C_MARK in r.text, "```python\ndef solution(*args):\n    return None\n```")
    server.script(lambda r: r.model == STAND_IN_JUDGE and "[Checklist]" in r.text, "<score>1/2</score>")
    server.script(lambda r: r.model == STAND_IN_JUDGE and "You are evaluating" in r.text, "Score: 1")


class Run:
    def __init__(self, name: str, result: RunResult, trace_dir: Path, seconds: float, tasks: list[str]) -> None:
        self.name, self.result, self.seconds, self.tasks = name, result, seconds, tasks
        self.calls = generate_trace.read(trace_dir)


@pytest.fixture(scope="module")
def runs(tiny_vlm: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("qwen2_5_vl_e2e")
    commands = _readme_hf_commands()
    (model_args,) = {c.model_args for c in commands}
    model_args = with_model_args(model_args, pretrained=str(tiny_vlm), **CPU_DEVICE_ARGS)
    first = [t for c in commands if "HUMANEVAL_V_DESCRIPTIONS" not in c.env for t in c.tasks]
    second = [t for c in commands if "HUMANEVAL_V_DESCRIPTIONS" in c.env for t in c.tasks]
    readme_env = {k: v for c in commands for k, v in c.env.items() if k != "HUMANEVAL_V_DESCRIPTIONS"}
    fixtures = {
        "vlm2_bench": vlm2_fx.write(work / "data" / "vlm2_bench"),
        "humaneval_v": hev_fx.write(work / "data" / "humaneval_v", qids=HEV_QIDS),
        "haerae_vision": haerae_fx.write(work / "data" / "haerae_vision"),
    }
    data_env = {k: v for fs in fixtures.values() for k, v in fs.env.items()}
    out: dict[str, Any] = {"fixtures": fixtures, "model_args": model_args, "tiny_vlm": tiny_vlm}
    with StandInServer(default_reply=None) as server:
        _script_judge(server)
        extra = {**readme_env, "HUMANEVAL_V_STRONG_CODER": "1", "OMP_NUM_THREADS": "1", "LMMS_TASKS_JUDGE_PROGRESS": "0"}
        base_env = offline_env(server.base_url, work, data_env, extra=extra)

        def run(name: str, tasks: list[str], num_processes: int, descriptions: Path | None = None) -> Run:
            trace = work / "trace" / name
            env = generate_trace.environment(trace, base_env)
            # each run judges and executes for itself (no cache shared between the runs compared)
            env["LMMS_TASKS_JUDGE_CACHE_DIR"] = str(work / "judge_cache" / name)
            env["LMMS_TASKS_EXEC_CACHE_DIR"] = str(work / "exec_cache" / name)
            if descriptions is not None:
                env["HUMANEVAL_V_DESCRIPTIONS"] = str(descriptions)
            command = cli_command("qwen2_5_vl", model_args, tasks, work / name, num_processes=num_processes)
            started = time.monotonic()
            if num_processes == 1:  # lmms-eval's CLI entry in this process, traced here
                with generate_trace.traced(trace):
                    result = run_in_process(command, work / name, env=env).check()
            else:  # `accelerate launch`: each rank traced by the start-up hook
                result = run_command(command, work / name, env=env, timeout=900).check()
            return Run(name, result, trace, time.monotonic() - started, tasks)

        out["A"] = run("A", first, 1)
        out["B"] = run("B", second, 1, descriptions=work / "A")
        out["C"] = run("C", first + second, 2, descriptions=work / "A")
    for name in "ABC":
        print(f"\nqwen2_5_vl run {name} ({out[name].tasks}): {out[name].seconds:.1f} s, {len(out[name].calls)} generate calls")
    return out


# -- decoding the traced prompts -------------------------------------------------------------------------

_MESSAGE = re.compile(r"<\|im_start\|>(\w+)\n(.*?)<\|im_end\|>\n", re.DOTALL)
_VISION = re.compile(r"<\|vision_start\|>((?:<\|image_pad\|>)+|(?:<\|video_pad\|>)+)<\|vision_end\|>")


class Call:
    """One traced generate call (batch size 1), with its prompt decoded into messages and parts."""

    def __init__(self, record: dict[str, Any], tokenizer: Any) -> None:
        (ids,) = record["input_ids"]
        self.record = record
        self.prompt = tokenizer.decode(ids, skip_special_tokens=False)
        self.reply = tokenizer.decode(record["generated_ids"][0], skip_special_tokens=True)
        self.generation = record["generation"]
        assert self.prompt.endswith("<|im_start|>assistant\n"), self.prompt[-200:]
        self.messages = _MESSAGE.findall(self.prompt)
        self.roles = [role for role, _ in self.messages]
        user = self.messages[-1][1]
        self.parts: list[tuple[str, Any]] = []  # ("image", n placeholder tokens) | ("video", n) | ("text", str)
        position = 0
        for match in _VISION.finditer(user):
            if match.start() > position:
                self.parts.append(("text", user[position : match.start()]))
            kind = "image" if "image_pad" in match.group(1) else "video"
            self.parts.append((kind, match.group(1).count("|>")))
            position = match.end()
        if position < len(user):
            self.parts.append(("text", user[position:]))

    @property
    def user_text(self) -> str:
        return "".join(value for kind, value in self.parts if kind == "text")

    @property
    def system(self) -> str | None:
        return self.messages[0][1] if self.roles[0] == "system" else None

    def key(self) -> tuple:
        return (self.prompt, tuple(sorted((k, str(v)) for k, v in self.generation.items())))


@pytest.fixture(scope="module")
def calls(runs: dict[str, Any]) -> dict[str, list[Call]]:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(runs["tiny_vlm"] / "tokenizer.json"))
    return {name: [Call(record, tokenizer) for record in runs[name].calls] for name in "ABC"}


# -- what each task should have sent -----------------------------------------------------------------------


def _benchmark(task: str) -> str:
    return next(b for b in ("vlm2_bench", "humaneval_v", "haerae_vision") if task.startswith(b))


def expected_generation(task: str) -> dict[str, Any]:
    """The benchmarks' official limits and sampling (spec §1.4, §2.4, HAERAE K8), as lmms-eval's qwen2_5_vl
    backend passes them to generate (greedy: do_sample False and no temperature/top_p/top_k)."""
    greedy = {"do_sample": False, "temperature": None, "top_p": None, "top_k": None, "num_beams": 1}
    if task.startswith("vlm2_bench"):
        return {**greedy, "max_new_tokens": 512 if task.startswith("vlm2_bench_gc") or task == "vlm2_bench_pc_vid" else 2048}
    if task.startswith("humaneval_v"):
        if task.endswith("_pass3") and task != "humaneval_v_t2c_pass3":  # t2c_pass3: each description greedily
            return {"do_sample": True, "temperature": 0.8, "top_p": 0.95, "top_k": 20, "num_beams": 1, "max_new_tokens": 2048}
        return {**greedy, "max_new_tokens": 2048}
    return {"do_sample": True, "temperature": 0.2, "top_p": 0.95, "top_k": None, "num_beams": 1, "max_new_tokens": 512}


def _tokens_for(size: tuple[int, int]) -> int:
    """Vision tokens of an image of (width, height) after qwen_vl_utils' resize within the README's limits."""
    height, width = smart_resize(size[1], size[0], min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS)
    return (height // 28) * (width // 28)


def _haerae_rgb(index: int, mode: str) -> tuple[int, int, int]:
    return haerae_fx._image(index, mode).convert("RGB").resize((1, 1), Image.BOX).getpixel((0, 0))


def expected_visuals(runs: dict[str, Any], task: str, text: str) -> tuple[str, list[tuple[int, tuple[int, int, int]]]]:
    """(where the images go: "before" / "after" the text / "none", [(vision tokens, RGB) per image]) for the
    record whose prompt text is `text`."""
    fixtures = runs["fixtures"]
    if task.startswith("vlm2_bench"):
        subtask = task[len("vlm2_bench_") :]
        for row in fixtures["vlm2_bench"].records[subtask]:
            if subtask == "pc_vid" and f"[pc_vid:{row['vid']}]" in text:
                frames = sample_frames(Path(fixtures["vlm2_bench"].root) / "data/pc/video/UNI" / f"{row['vid']}.mp4")
                colours = row["_colours"]
                a, b = colours[0], colours[1]
                order = [a, a, b, b] if len(colours) == 2 else [a, b, b, a]  # 1 fps, at least 4 frames
                return "before", [(_tokens_for(f.size), colour_for(c)) for f, c in zip(frames, order, strict=True)]
            if subtask != "pc_vid" and vlm2_fx.question_tag(subtask, row["q_id"], row["gt_answer"]) in text:
                return "before", [(_tokens_for((64, 48)), colour_for(c)) for c in row["_colours"]]
    elif task.startswith("humaneval_v"):
        for index, row in enumerate(r for r in hev_fx.records() if r["qid"] in HEV_QIDS):
            if row["function_signature"].splitlines()[0] in text:
                uses_image = any(task == f"humaneval_v_{s}" or task == f"humaneval_v_{s}_pass3" for s in ("v2c", "v2c_cot", "v2t"))
                return ("before", [(_tokens_for((96, 96)), colour_for(index))]) if uses_image else ("none", [])
    else:
        for item in haerae_fx.ITEMS:
            if text in (item["question_original"].strip(), item["question_explicit"].strip()):
                return "after", [(_tokens_for((64, 48)), _haerae_rgb(i, mode)) for i, mode in item["images"]]
    raise AssertionError(f"{task}: no fixture record for prompt text {text[:120]!r}")


def _expected_requests(run: Run) -> Counter:
    """(user text, task) -> how many generate calls the run's samples imply (repeats included)."""
    wanted: Counter = Counter()
    for task, samples in run.result.samples.items():
        repeats = int(run.result.results["configs"][task].get("repeats") or 1)
        for sample in samples:
            wanted[(sample["input"], task)] += repeats
    return wanted


# -- tests -----------------------------------------------------------------------------------------------


def test_every_task_and_group_is_scored_with_every_metric(runs: dict[str, Any]) -> None:
    for name in "ABC":
        results = runs[name].result.results
        tasks = set(results["configs"])
        assert tasks and set(results["results"]) >= tasks
        for task in tasks:
            config = results["configs"][task]
            filters = [f["name"] for f in config.get("filter_list") or []] or ["none"]
            metrics = [m["metric"] for m in config["metric_list"]]
            section = results["results"][task]
            missing = [f"{m},{f}" for m in metrics for f in filters if f"{m},{f}" not in section]
            assert not missing, (name, task, missing)
            samples = runs[name].result.samples[task]
            assert len(samples) == results["n-samples"][task]["effective"] > 0, (name, task)
            assert all(set(metrics) <= set(sample) for sample in samples), (name, task)
        groups = {g for g, subtasks in results.get("group_subtasks", {}).items() if subtasks}
        if name != "B":  # B is HumanEval-V's second stage: two tasks, no group
            assert {"vlm2_bench", "vlm2_bench_gc", "vlm2_bench_oc", "vlm2_bench_pc", "humaneval_v", "haerae_vision"} <= groups
        for group in groups - {"humaneval_v"}:  # humaneval_v reports settings separately (no cross-setting metric)
            assert any("," in key for key in results["groups"][group]), (name, group)
    every_task = set(runs["A"].result.results["configs"]) | set(runs["B"].result.results["configs"])
    assert len([t for t in every_task if t.startswith("vlm2_bench_")]) == 9
    assert {t for t in every_task if t.startswith("humaneval_v_")} == {
        f"humaneval_v_{s}{p}" for s in ("v2c", "v2c_cot", "v2t", "gt_t2c", "t2c") for p in ("", "_pass3")
    }
    assert {t for t in every_task if t.startswith("haerae_vision_")} == {"haerae_vision_original", "haerae_vision_explicit"}
    assert set(runs["C"].result.results["configs"]) == every_task


def test_each_generate_call_carried_its_records_images_and_text(runs: dict[str, Any], calls: dict[str, list[Call]]) -> None:
    one_process = calls["A"] + calls["B"]
    by_text: dict[str, list[Call]] = {}
    for call in one_process:
        by_text.setdefault(call.user_text, []).append(call)
    checked = Counter()
    for name in "AB":
        for (text, task), count in _expected_requests(runs[name]).items():
            matching = [c for c in by_text.get(text, []) if c.generation == {**c.generation, **expected_generation(task)}]
            assert len(matching) >= count, (task, text[:80], len(matching), count)
            where, images = expected_visuals(runs, task, text)
            for call in matching:
                kinds = [kind for kind, _ in call.parts]
                if where == "before":
                    assert kinds == ["image"] * len(images) + ["text"], (task, kinds)
                elif where == "after":
                    assert kinds == ["text"] + ["image"] * len(images), (task, kinds)
                else:
                    assert kinds == ["text"], (task, kinds)
                # the placeholder runs the chat template and processor produced, per image, in order
                assert [n for kind, n in call.parts if kind == "image"] == [tokens for tokens, _ in images], task
                grids = call.record["image_grid_thw"] or []
                assert [t * h * w // 4 for t, h, w in grids] == [tokens for tokens, _ in images], task
                assert call.record["image_tokens"] == [sum(tokens for tokens, _ in images)]
                assert call.record["video_tokens"] == [0] and call.record["video_grid_thw"] is None
                # the record's images, in the record's order, as the model saw them
                seen = call.record.get("image_mean_rgb") or []
                assert len(seen) == len(images)
                for got, (_, want) in zip(seen, images):
                    assert all(abs(g - w) <= COLOUR_TOLERANCE for g, w in zip(got, want)), (task, got, want)
                assert call.system == (HAERAE_SYSTEM if task.startswith("haerae") else DEFAULT_SYSTEM_PROMPT)
                assert call.roles == ["system", "user"]
            checked[_benchmark(task)] += count
    assert set(checked) == {"vlm2_bench", "humaneval_v", "haerae_vision"}
    # one process: exactly as many generate calls as the samples need, no more
    assert len(one_process) == sum(checked.values())


def test_the_video_subtask_reached_the_model_as_its_sampled_frames(calls: dict[str, list[Call]]) -> None:
    video_calls = [c for c in calls["A"] if "[pc_vid:" in c.user_text]
    assert len(video_calls) == len(vlm2_fx.VIDEOS)
    for call in video_calls:
        assert len(call.record["image_grid_thw"]) == 4 and call.record["generation"]["max_new_tokens"] == 512


def test_generation_used_each_benchmarks_limits(runs: dict[str, Any], calls: dict[str, list[Call]]) -> None:
    limits = Counter((c.generation["max_new_tokens"], c.generation["do_sample"], c.generation.get("temperature")) for c in calls["A"] + calls["B"])
    wanted = Counter()
    for name in "AB":
        for (_, task), count in _expected_requests(runs[name]).items():
            g = expected_generation(task)
            wanted[(g["max_new_tokens"], g["do_sample"], g["temperature"])] += count
    assert limits == wanted
    assert {512, 2048} <= {key[0] for key in limits}


def test_the_models_reply_is_what_every_sample_holds(runs: dict[str, Any], calls: dict[str, list[Call]]) -> None:
    assert {c.reply for name in "ABC" for c in calls[name]} == {REPLY}
    for name in "ABC":
        for task, samples in runs[name].result.samples.items():
            for sample in samples:
                responses = sample["filtered_resps"] if isinstance(sample["filtered_resps"], list) else [sample["filtered_resps"]]
                assert set(responses) == {REPLY}, (name, task, responses)


def test_hand_computed_metrics(runs: dict[str, Any]) -> None:
    """The reply "Score: 1 T" parses as T (T/F tasks), 1 (counting), no option (grouping), no code."""
    a, b = runs["A"].result, runs["B"].result
    for task in ("vlm2_bench_gc_mat", "vlm2_bench_gc_trk", "vlm2_bench_oc_cpr", "vlm2_bench_pc_cpr"):
        assert a.metric(task, "vlm2_score") == 0.0  # every pair has a gt-F member, answered T
        assert a.metric(task, "tf_pos_acc") > 0.0
    assert a.metric("vlm2_bench_oc_grp", "vlm2_score") == a.metric("vlm2_bench_pc_grp", "vlm2_score") == 0.0
    assert a.metric("vlm2_bench_oc_cnt", "cnt_acc") == pytest.approx(100 / 5)  # only cnt1 (gt 1) is exact
    assert a.metric("vlm2_bench_pc_cnt", "cnt_acc") == pytest.approx(100 / 3)  # only pcnt2 (gt 1)
    assert a.metric("vlm2_bench_pc_vid", "vid_ab_pct") == 100.0 and a.metric("vlm2_bench_pc_vid", "vid_aba_pct") == 50.0
    for task in ("humaneval_v_v2c", "humaneval_v_v2c_cot", "humaneval_v_gt_t2c"):
        assert a.metric(task, "pass@1") == 0.0
    for task in ("humaneval_v_v2c_pass3", "humaneval_v_v2c_cot_pass3", "humaneval_v_gt_t2c_pass3"):
        assert a.metric(task, "pass@3", "n6") == 0.0
    assert a.metric("humaneval_v_v2t", "strong_coder_pass_at_1") == 50.0  # the coder solves q1 only
    assert a.metric("humaneval_v_v2t_pass3", "strong_coder_pass_at_3", "n6") == 50.0
    assert b.metric("humaneval_v_t2c", "pass@1") == 0.0 and b.metric("humaneval_v_t2c_pass3", "pass@3") == 0.0
    for variant in ("original", "explicit"):
        assert a.metric(f"haerae_vision_{variant}", "haerae_vision_score") == pytest.approx(0.5)
        assert a.metric(f"haerae_vision_{variant}", "judge_failures") == 0
    assert a.metric("haerae_vision", "underspec_gap") == pytest.approx(0.0)


def _comparable(value: object) -> object:
    """Judge summaries name the stand-in server's port."""
    return re.sub(r"@127\.0\.0\.1:\d+", "@127.0.0.1:PORT", value) if isinstance(value, str) else value


def _same(a: object, b: object) -> bool:
    """Numbers equal to float precision (the gather order changes summation order); all else exactly."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return a == pytest.approx(b, rel=1e-9, abs=1e-9)
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) == set(b) and all(_same(a[k], b[k]) for k in a)
    return a == b


def _metrics(results: dict[str, Any]) -> dict[tuple[str, str], object]:
    return {
        (name, key): _comparable(value)
        for section in ("results", "groups")
        for name, values in results.get(section, {}).items()
        for key, value in values.items()
        if "," in key and "_stderr" not in key
    }


def test_two_processes_give_identical_metrics(runs: dict[str, Any]) -> None:
    single = {**_metrics(runs["A"].result.results), **_metrics(runs["B"].result.results)}
    double = _metrics(runs["C"].result.results)
    assert single and set(single) == set(double)
    differing = {k: (single[k], double[k]) for k in single if not _same(single[k], double[k])}
    assert not differing
    a_desc = {s["description_rate"]["qid"]: s["description_rate"]["descriptions"] for s in runs["A"].result.samples["humaneval_v_v2t_pass3"]}
    c_desc = {s["description_rate"]["qid"]: s["description_rate"]["descriptions"] for s in runs["C"].result.samples["humaneval_v_v2t_pass3"]}
    assert a_desc == c_desc  # so C's second stage, fed A's descriptions, saw what its own first stage wrote


def test_two_process_run_split_the_same_requests_over_both_ranks(calls: dict[str, list[Call]]) -> None:
    by_rank = Counter(call.record["rank"] for call in calls["C"])
    assert set(by_rank) == {0, 1} and len({call.record["pid"] for call in calls["C"]}) == 2
    single = Counter(call.key() for call in calls["A"] + calls["B"])
    double = Counter(call.key() for call in calls["C"])
    assert set(double) == set(single)
    # lmms-eval pads the shorter rank with copies of its requests: never fewer calls, a few more at most
    assert all(double[k] >= single[k] for k in single)
    assert sum(double.values()) - sum(single.values()) <= len(calls["C"]) // 2


def test_readme_model_args_were_used(runs: dict[str, Any]) -> None:
    for name in "ABC":
        config = runs[name].result.results["config"]
        assert config["model"] == "qwen2_5_vl" and "(chat)" in config["model_backend"]
        assert config["model_args"] == runs["model_args"]
    assert "min_pixels=3136" in runs["model_args"] and "max_pixels=12845056" in runs["model_args"]
    assert os.path.isdir(runs["model_args"].split("pretrained=")[1].split(",")[0])
