"""A task's setting and k are what its YAML declares (issue 54): pass@10 on a v2 setting is one YAML in a
temporary include path, run through the real lmms-eval CLI against the stand-in server, and its pass@10 is
the unbiased estimate computed here by hand from the scripted replies (n = 20 samples, as v1's pass@10)."""

from __future__ import annotations

from math import comb
from pathlib import Path

import pytest

from lmms_tasks import tasks_path
from lmms_tasks.utils.testing.e2e import STAND_IN_MODEL, offline_env, run_lmms_eval
from lmms_tasks.utils.testing.fixtures import humaneval_v as fx
from lmms_tasks.utils.testing.openai_server import StandInServer
from lmms_tasks.utils.testing.unhurried import unhurried

pytestmark = pytest.mark.e2e

N = 20
# right samples out of 20, per task
RIGHT = {"q1": 0, "q2": 1, "q2-2": 5, "q3": 13}
V2C_MARK = "**without any additional text or explanation**"

PASS10_YAML = """\
task: humaneval_v_v2c_pass10
include: {v2c_pass3}
dataset_kwargs: {{subtask: v2c_pass10, setting: v2c, k: 10}}
repeats: {n}
filter_list:
  - name: n{n}
    filter:
      - {{function: take_first_k, k: {n}}}
score_key: pass@10
metric_list:
  - {{metric: pass@10, aggregation: !function lmms_tasks.utils.humaneval_v.hooks.agg_pass_at_k, higher_is_better: true}}
  - {{metric: pass@10_unrounded, aggregation: !function lmms_tasks.utils.humaneval_v.hooks.agg_pass_at_k_unrounded, higher_is_better: true}}
  - {{metric: parse_success_rate, aggregation: !function lmms_tasks.utils.humaneval_v.hooks.agg_parse_success_rate, higher_is_better: true}}
  - {{metric: parse_success_rate_unrounded, aggregation: !function lmms_tasks.utils.humaneval_v.hooks.agg_parse_success_rate_unrounded, higher_is_better: true}}
"""


def test_pass_at_10_of_a_v2_setting_is_one_yaml(tmp_path: Path) -> None:
    include = tmp_path / "include"
    include.mkdir()
    v2c_pass3 = Path(tasks_path()) / "humaneval_v" / "humaneval_v_v2c_pass3.yaml"
    (include / "humaneval_v_v2c_pass10.yaml").write_text(PASS10_YAML.format(v2c_pass3=v2c_pass3, n=N), encoding="utf-8")
    fixtures = fx.write(tmp_path / "data")
    rows = fixtures.records[fx.RECORDS_KEY]
    assert sorted(r["qid"] for r in rows) == sorted(RIGHT)
    with StandInServer(default_reply=None) as server:
        for row in rows:
            sig = row["function_signature"].splitlines()[0]
            right = f"```python\n{row['ground_truth_solution']}```"
            wrong = f"```python\n{sig}\n    return None\n```"
            c = RIGHT[row["qid"]]
            server.script(lambda r, sig=sig: r.model == STAND_IN_MODEL and V2C_MARK in r.text and sig in r.text, [right] * c + [wrong] * (N - c))
        env = offline_env(server.base_url, tmp_path, fixtures.env, extra={"HUMANEVAL_V_ALLOW_CODE_EXECUTION": "1"})
        with unhurried():
            run = run_lmms_eval(["humaneval_v_v2c_pass10"], server.base_url, tmp_path / "out", env=env, include_path=str(include), in_process=True).check()
        requests = len(server.requests)
    assert requests == N * len(RIGHT)
    # unbiased pass@10 of each task from its n = 20 samples, c right: 1 - C(n - c, 10) / C(n, 10)
    by_hand = {q: 1 - comb(N - c, 10) / comb(N, 10) for q, c in RIGHT.items()}
    assert by_hand["q1"] == 0.0 and by_hand["q2"] == pytest.approx(0.5) and by_hand["q3"] == 1.0
    expected = 100 * sum(by_hand.values()) / len(by_hand)
    assert run.metric("humaneval_v_v2c_pass10", "pass@10_unrounded", f"n{N}") == pytest.approx(expected, abs=1e-9)
    assert run.metric("humaneval_v_v2c_pass10", "pass@10", f"n{N}") == round(expected, 1)
    scored = {s["pass@10"]["qid"]: s["pass@10"] for s in run.samples["humaneval_v_v2c_pass10"]}
    assert {q: round(i["pass@10"], 9) for q, i in scored.items()} == {q: round(100 * v, 9) for q, v in by_hand.items()}
