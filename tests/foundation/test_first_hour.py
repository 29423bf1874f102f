"""What a newcomer hits in the first hour, through the real commands: no traceback when a pipe closes early
(`lmms-tasks tasks | head`), and the stand-in's 404 names the model the client asked for."""

from __future__ import annotations

import os
import subprocess
import sys

import openai
import pytest

from lmms_tasks.utils.testing.openai_server import StandInServer


def test_a_pipe_closed_before_the_output_ends_quietly() -> None:
    read_end, write_end = os.pipe()
    proc = subprocess.Popen([sys.executable, "-m", "lmms_tasks", "tasks"], stdout=write_end, stderr=subprocess.PIPE, text=True)
    os.close(write_end)
    os.close(read_end)  # the reader is gone before the command writes, as `| head` is after its lines
    _, err = proc.communicate(timeout=300)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert proc.returncode == 141  # as a tool ended by SIGPIPE


@pytest.mark.parametrize("asked", ["gpt-4o-2024-11-20-typo", "stand-in-judgee"])
def test_the_stand_in_404_names_the_model_asked_for(asked: str) -> None:
    alias = lambda model: "stand-in-vlm"  # every name is served as the stand-in model, as `lmms-tasks stand-in` does
    with StandInServer(default_reply="x", model_alias=alias, served_models=["stand-in-vlm", "stand-in-judge"]) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="EMPTY", max_retries=0)
        with pytest.raises(openai.NotFoundError) as raised:
            client.chat.completions.create(model=asked, messages=[{"role": "user", "content": "hi"}])
    assert f"`{asked}`" in str(raised.value) and "stand-in-vlm" not in str(raised.value)


def test_the_limit_mm_per_prompt_warning_says_what_vllm_does_without_it() -> None:
    from lmms_tasks.utils.services.model_args import model_args_warnings

    argv = ["lmms-eval", "--model", "vllm", "--model_args", "model=m,max_new_tokens=1"]
    (warning,) = model_args_warnings("vlm2_bench_gc_mat", argv)
    assert "up to 999 images per request" in warning and "reject" not in warning and "media-stats" in warning
