"""Record what a real Hugging Face backend hands to `model.generate`, from inside the lmms-eval process.

The end-to-end tests of real backends must see what the model received: how many vision tokens the
processor put in each prompt, which images (by colour) in which order, and the generation limits. The
backend itself stays lmms-eval's code; this module only observes. `install(trace_dir)` registers an
import hook that, once `transformers.generation.utils` is imported, wraps `GenerationMixin.generate` so
that every call appends one JSON line to `<trace_dir>/trace-<pid>.jsonl` and then returns the call's own
result unchanged.

It is switched on by `LMMS_TASKS_GENERATE_TRACE=<dir>` through the `sitecustomize.py` in
`trace_site/` (put that directory on PYTHONPATH): Python imports `sitecustomize` at start-up, before
lmms-eval, in every process `accelerate launch` starts. An in-process run (`e2e.run_in_process`) is traced
with `with traced(dir):`.

Each line holds: pid, rank (`RANK`), the prompt token ids per batch row, the count of image and video
placeholder tokens per row, `image_grid_thw` / `video_grid_thw`, the mean RGB (0-255) of each image as
the model saw it (from `pixel_values`, un-normalised with the processor's CLIP mean/std), the
generation keyword arguments (`max_new_tokens`, `do_sample`, `temperature`, `top_p`, `top_k`, ...), and
the generated token ids per row.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

ENV_VAR = "LMMS_TASKS_GENERATE_TRACE"
TARGET_MODULE = "transformers.generation.utils"
SITE_DIR = Path(__file__).resolve().parent / "trace_site"

# Qwen2-VL / Qwen2.5-VL processors normalise with the OpenAI CLIP statistics.
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
GENERATION_KEYS = ("max_new_tokens", "do_sample", "temperature", "top_p", "top_k", "num_beams", "eos_token_id", "pad_token_id", "use_cache")

_lock = threading.Lock()


class _AfterImport(importlib.abc.MetaPathFinder):
    """Run `patch(module)` right after `name` is executed by its normal loader."""

    def __init__(self, name: str, patch: Callable[[ModuleType], None]) -> None:
        self.name = name
        self.patch = patch

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        exec_module = spec.loader.exec_module
        patch = self.patch

        def exec_then_patch(module: ModuleType) -> None:
            exec_module(module)
            patch(module)

        spec.loader.exec_module = exec_then_patch  # type: ignore[method-assign]
        return spec


def _tolist(value: Any) -> Any:
    return value.tolist() if hasattr(value, "tolist") else value


def _image_means(pixel_values: Any, grid_thw: Any) -> list[list[float]]:
    """Mean RGB (0-255) per image: rows of `pixel_values` are patches, image after image; each row is
    channel-major (channel, temporal, patch, patch)."""
    import torch

    means: list[list[float]] = []
    rows = pixel_values.detach().to(torch.float32)
    start = 0
    for t, h, w in grid_thw.tolist():
        patches = rows[start : start + t * h * w]
        start += t * h * w
        per_channel = patches.reshape(patches.shape[0], 3, -1).mean(dim=(0, 2))
        means.append([round(float((v * s + m) * 255.0), 1) for v, m, s in zip(per_channel, CLIP_MEAN, CLIP_STD)])
    return means


def _record(model: Any, kwargs: dict[str, Any], output: Any) -> dict[str, Any]:
    config = getattr(model, "config", None)
    image_token = getattr(config, "image_token_id", None)
    video_token = getattr(config, "video_token_id", None)
    input_ids = kwargs.get("input_ids")
    rows = input_ids.tolist() if input_ids is not None else []
    sequences = getattr(output, "sequences", output)
    generated = [row[len(prompt) :] for row, prompt in zip(sequences.tolist(), rows)] if hasattr(sequences, "tolist") else []
    record: dict[str, Any] = {
        "pid": os.getpid(),
        "rank": int(os.environ.get("RANK", "0")),
        "model": type(model).__name__,
        "input_ids": rows,
        "image_tokens": [row.count(image_token) for row in rows],
        "video_tokens": [row.count(video_token) for row in rows],
        "image_grid_thw": _tolist(kwargs.get("image_grid_thw")),
        "video_grid_thw": _tolist(kwargs.get("video_grid_thw")),
        "generation": {key: _tolist(kwargs[key]) for key in GENERATION_KEYS if key in kwargs},
        "generated_ids": generated,
    }
    if kwargs.get("pixel_values") is not None and kwargs.get("image_grid_thw") is not None:
        record["image_mean_rgb"] = _image_means(kwargs["pixel_values"], kwargs["image_grid_thw"])
    return record


def _patch_generate(trace_dir: Path) -> Callable[[ModuleType], None]:
    def patch(module: ModuleType) -> None:
        mixin = module.GenerationMixin
        original = mixin.generate
        if getattr(original, "_lmms_tasks_traced", False):
            return

        def generate(self: Any, *args: Any, **kwargs: Any) -> Any:
            output = original(self, *args, **kwargs)
            line = json.dumps(_record(self, kwargs, output))
            with _lock, open(trace_dir / f"trace-{os.getpid()}.jsonl", "a", encoding="utf-8") as fh:
                fh.write(line + "\n")
            return output

        generate._lmms_tasks_traced = True  # type: ignore[attr-defined]
        generate.__wrapped__ = original  # type: ignore[attr-defined]
        generate.__doc__ = original.__doc__
        mixin.generate = generate

    return patch


def install(trace_dir: str | Path) -> None:
    """Trace every `generate` call of this process into `trace_dir` (created if missing)."""
    directory = Path(trace_dir)
    directory.mkdir(parents=True, exist_ok=True)
    patch = _patch_generate(directory)
    if TARGET_MODULE in sys.modules:
        patch(sys.modules[TARGET_MODULE])
        return
    if not any(isinstance(finder, _AfterImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(TARGET_MODULE, patch))


@contextlib.contextmanager
def traced(trace_dir: str | Path) -> Iterator[None]:
    """Trace every `generate` call of this process into `trace_dir` for the duration (an in-process run)."""
    import transformers.generation.utils as module

    original = module.GenerationMixin.generate
    install(trace_dir)
    try:
        yield
    finally:
        module.GenerationMixin.generate = original


def read(trace_dir: str | Path) -> list[dict[str, Any]]:
    """Every traced call, from every process that wrote into `trace_dir`."""
    records: list[dict[str, Any]] = []
    for path in sorted(Path(trace_dir).glob("trace-*.jsonl")):
        with open(path, encoding="utf-8") as fh:
            records.extend(json.loads(line) for line in fh if line.strip())
    return records


def environment(trace_dir: str | Path, base: dict[str, str]) -> dict[str, str]:
    """`base` plus what switches tracing on in a child process."""
    env = dict(base)
    env[ENV_VAR] = str(trace_dir)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SITE_DIR), base.get("PYTHONPATH", "")) if p)
    return env
