"""The model args the README and `scripts/gpu_smoke.sh` pass to lmms-eval's backends exist in lmms-eval
0.7.3's backend code (read from its source, so vLLM need not be installed), and the values our tasks need
are there. A misspelt name would be a silent no-op (vLLM forwards unknown args to its engine) or a crash
(the HF backend asserts it got no unknown kwargs) on a machine these tests never reach."""

from __future__ import annotations

import ast
import importlib.util
import json
import re
from pathlib import Path

import pytest

from lmms_tasks.utils.testing.backends import HF_MARK, parse_model_args, readme_commands
from lmms_tasks.utils.testing.e2e import RunResult
from lmms_tasks.utils.testing.gpu_smoke import VLLM_ENGINE_ARGS, table, vllm_model_args

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
BENCHMARKS = ("vlm2_bench", "humaneval_v", "haerae_vision")


def _lmms_eval_source(relative: str) -> ast.Module:
    spec = importlib.util.find_spec("lmms_eval")
    assert spec is not None and spec.origin
    return ast.parse((Path(spec.origin).parent / relative).read_text(encoding="utf-8"))


def _init_params(module: ast.Module, class_name: str) -> set[str]:
    (cls,) = [n for n in module.body if isinstance(n, ast.ClassDef) and n.name == class_name]
    (init,) = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"]
    return {a.arg for a in init.args.args + init.args.kwonlyargs if a.arg != "self"}


def _call_keywords(module: ast.Module, callee: str) -> set[str]:
    """Keyword names of every `callee(...)` call in the module (e.g. what the backend passes to vllm.LLM)."""
    names: set[str] = set()
    for node in ast.walk(module):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == callee:
            names |= {k.arg for k in node.keywords if k.arg}
    return names


def _vllm_backend() -> tuple[set[str], set[str]]:
    """(model args the chat/simple VLLM classes take by name, keywords they already pass to vllm.LLM)."""
    chat, simple = _lmms_eval_source("models/chat/vllm.py"), _lmms_eval_source("models/simple/vllm.py")
    return _init_params(chat, "VLLM") | _init_params(simple, "VLLM"), _call_keywords(simple, "LLM")


def _check_vllm_args(args: dict[str, str], where: str) -> None:
    named, passed_to_llm = _vllm_backend()
    assert "batch_size" not in args, f"{where}: batch_size comes from --batch_size (a duplicate keyword otherwise)"
    for key in args:
        assert key in named or key in VLLM_ENGINE_ARGS, f"{where}: {key!r} is neither a VLLM backend parameter nor a listed vllm.LLM arg"
        if key not in named:
            assert key not in passed_to_llm, f"{where}: the backend already passes {key!r} to vllm.LLM"
    assert args.get("max_new_tokens") == "1", f"{where}: without max_new_tokens=1 the backend's 4096 floor lifts every task's limit"
    limit = json.loads(re.sub(r"\$\w+|\$\{\w+(?::\?[^}]*)?\}|\$\(.*?\)", "4", args["limit_mm_per_prompt"]))
    assert set(limit) == {"image"} and isinstance(limit["image"], int), where


def test_vllm_backend_source_is_what_these_checks_assume() -> None:
    named, passed_to_llm = _vllm_backend()
    assert {"model", "max_new_tokens", "gpu_memory_utilization", "tensor_parallel_size", "data_parallel_size"} <= named
    assert {"seed", "model", "trust_remote_code"} <= passed_to_llm  # e.g. seed=1: a `seed` model arg would collide


@pytest.mark.parametrize("readme", ["README.md", *(f"lmms_tasks/{b}/README.md" for b in BENCHMARKS)])
def test_readme_vllm_commands_use_real_argument_names(readme: str) -> None:
    commands = [c for c in readme_commands(REPO / readme, model="vllm") if c.model_args]
    assert commands
    if readme == "README.md":
        assert all(any(t.startswith(b) for c in commands for t in c.tasks) for b in BENCHMARKS)
    for command in commands:
        _check_vllm_args(command.args, f"{readme}: vllm command for {command.tasks}")


def test_gpu_smoke_vllm_args_use_real_argument_names() -> None:
    _check_vllm_args(vllm_model_args("/models/tiny-qwen2.5-vl", 4), "gpu_smoke")
    script = (REPO / "scripts" / "gpu_smoke.sh").read_text(encoding="utf-8")
    assert "lmms_tasks.utils.testing.gpu_smoke" in script


def test_readme_hf_commands_carry_the_args_our_tasks_need() -> None:
    commands = readme_commands(README, mark=HF_MARK)
    assert {c.block for c in commands} == set(BENCHMARKS)
    assert {c.model for c in commands} == {"qwen2_5_vl"}
    (model_args,) = {c.model_args for c in commands}
    args = parse_model_args(model_args)
    allowed = _init_params(_lmms_eval_source("models/simple/qwen2_5_vl.py"), "Qwen2_5_VL")
    assert set(args) <= allowed, set(args) - allowed  # the backend asserts it got no other kwargs
    assert args["min_pixels"] == "3136" and args["max_pixels"] == "12845056"  # the processor's own limits
    assert "max_new_tokens" not in args  # this backend takes each task's own limit
    hev = [c for c in commands if c.block == "humaneval_v"]
    assert [bool(c.env.get("HUMANEVAL_V_DESCRIPTIONS")) for c in hev] == [False, True]
    assert all(c.env.get("HUMANEVAL_V_ALLOW_CODE_EXECUTION") == "1" for c in hev)


@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vLLM is not installed (GPU machines: pip install -e .[vllm])")
def test_listed_engine_args_are_vllm_engine_args() -> None:
    import dataclasses

    from vllm.engine.arg_utils import EngineArgs

    fields = {f.name for f in dataclasses.fields(EngineArgs)}
    assert set(VLLM_ENGINE_ARGS) <= fields, set(VLLM_ENGINE_ARGS) - fields


def test_gpu_smoke_table_lists_every_task_and_group_with_its_first_metric(tmp_path: Path) -> None:
    results = {
        "results": {"vlm2_bench_gc_mat": {"alias": "x", "vlm2_score,none": 12.5, "vlm2_score_stderr,none": "N/A"}},
        "groups": {"vlm2_bench": {"vlm2_score,none": 50.0}},
        "configs": {"vlm2_bench_gc_mat": {"metric_list": [{"metric": "vlm2_score"}]}},
        "n-samples": {"vlm2_bench_gc_mat": {"effective": 2}},
    }
    run = RunResult(command=[], returncode=0, stdout="", stderr="", output_dir=tmp_path, results=results)
    lines = table([("vllm stage 1", run, 12.3)]).splitlines()
    assert lines[2] == "| vllm stage 1 | vlm2_bench_gc_mat | 2 | vlm2_score,none | 12.5 | 12 s |"
    assert lines[3] == "| vllm stage 1 | vlm2_bench |  | vlm2_score,none | 50 | 12 s |"


def test_readme_hf_cpu_variant_is_the_hf_args_plus_the_cpu_devices() -> None:
    """A CPU machine's first mistake (no `device_map=cpu`) ends with exit status 4: the README carries a CPU
    variant of the HF commands, with exactly the HF commands' args plus the two device args, on every benchmark."""
    (gpu_args,) = {c.model_args for c in readme_commands(README, mark=HF_MARK)}
    cpu = [c for c in readme_commands(README, model="qwen2_5_vl") if "device_map=cpu" in c.model_args]
    assert cpu
    for command in cpu:
        assert parse_model_args(command.model_args) == {**parse_model_args(gpu_args), "device": "cpu", "device_map": "cpu"}
        assert {t for t in command.tasks} == set(BENCHMARKS)
        assert command.env.get("HUMANEVAL_V_ALLOW_CODE_EXECUTION") == "1"
