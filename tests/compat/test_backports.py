"""The compat layer: each shim backports exactly its patch's feature into lmms-eval 0.7.3 and leaves every
other task's behaviour alone. Through the real CLI the same features are exercised by every end-to-end
test; these tests pin each shim's semantics against the patch contract (docs/UPSTREAM.md)."""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace
from typing import Any

import datasets
import pytest

from lmms_tasks.utils import compat
from lmms_tasks.utils.compat import datasets as compat_datasets
from lmms_tasks.utils.compat import exit_status, groups
from lmms_tasks.utils.services import status


@pytest.fixture(scope="module", autouse=True)
def activated() -> list[str]:
    return compat.activate()


def test_stock_lmms_eval_gets_every_backport_but_the_exit_status_outside_the_cli(activated: list[str]) -> None:
    # pytest is not the lmms-eval command: its exit status is not ours to change
    assert set(compat.installed()) == {s.NAME for s in compat.SHIMS} - {exit_status.NAME}
    assert compat.activate() == compat.installed()  # idempotent
    assert all(s.PATCHES for s in compat.SHIMS)  # each names the patch that retires it


def test_task_config_accepts_the_patched_fields() -> None:
    from lmms_eval.api.task import TaskConfig

    config = TaskConfig(task="t", strip_responses=False, custom_dataset=len)
    assert config.strip_responses is False and config.custom_dataset is len and config["task"] == "t"
    assert TaskConfig(task="t").strip_responses is True and TaskConfig(task="t").custom_dataset is None
    with pytest.raises(TypeError):
        TaskConfig(task="t", no_such_field=1)  # still strict about unknown keys
    assert {"strip_responses", "custom_dataset"} <= {f.name for f in dataclasses.fields(TaskConfig)}


def _task(strip: bool, output_type: str = "generate_until") -> Any:
    from lmms_eval.api.task import ConfigurableTask

    seen: list[Any] = []
    task = ConfigurableTask.__new__(ConfigurableTask)
    task._config = SimpleNamespace(strip_responses=strip, process_results=lambda doc, results: seen.append(results) or {"n": 1})
    task.OUTPUT_TYPE = output_type
    return task, seen


@pytest.mark.parametrize(
    ("results", "expected"),
    [
        (["    return a\n```\n"], ["    return a\n```\n"]),
        ([None], [""]),
        ([[" a ", "b\n", None]], [" a ", "b\n", ""]),  # take_first_k: the first (only) list
    ],
)
def test_strip_responses_false_keeps_whitespace(results: list[Any], expected: list[str]) -> None:
    task, seen = _task(strip=False)
    assert task.process_results({}, results) == {"n": 1}
    assert seen == [expected]


def test_strip_responses_true_is_lmms_evals_own_strip() -> None:
    task, seen = _task(strip=True)
    task.process_results({}, ["  x \n"])
    assert seen == [["x"]]


# -- groups ---------------------------------------------------------------------------------------------


def _entry(**fields: Any) -> Any:
    from lmms_eval.api.group import AggMetricConfig

    return AggMetricConfig(**fields)


RESULTS = {
    "t_a": {"acc,none": 0.5, "acc_stderr,none": 0.1, "pair_acc,none": 0.9, "pair_acc_stderr,none": 0.2, "samples": 10},
    "t_b": {"acc,none": 0.7, "acc_stderr,none": 0.2, "pair_acc,none": 0.1, "pair_acc_stderr,none": 0.2, "samples": 30},
}


def test_exact_match_does_not_take_metrics_that_merely_contain_the_name() -> None:
    out = groups.aggregate_entry(_entry(metric="acc", match="exact", aggregation="mean", weight_by_size=True), RESULTS, ["t_a", "t_b"])
    assert out["acc,none"] == pytest.approx((0.5 * 10 + 0.7 * 30) / 40)
    assert set(out) == {"acc,none", "acc_stderr,none"}  # pair_acc untouched


def test_group_metric_with_subtask_names_and_its_own_stderr() -> None:
    calls: list[Any] = []

    def only_b(values: list[float], sizes: list[int], weight_by_size: bool, subtasks: list[str]) -> float:
        calls.append(subtasks)
        return dict(zip(subtasks, values))["t_b"]

    only_b.stderr = lambda stderrs, sizes, weight_by_size, subtasks: math.sqrt(sum(s**2 for s in stderrs))  # type: ignore[attr-defined]
    out = groups.aggregate_entry(_entry(metric="acc", group_metric="acc_b", aggregation=only_b), RESULTS, ["t_a", "t_b"])
    assert out == {"acc_b,none": 0.7, "acc_b_stderr,none": pytest.approx(math.sqrt(0.1**2 + 0.2**2))}
    assert calls == [["t_a", "t_b"]]


def test_a_callable_without_subtasks_is_called_as_before_and_na_stderr_propagates() -> None:
    results = {**RESULTS, "t_b": {**RESULTS["t_b"], "acc_stderr,none": "N/A"}}
    out = groups.aggregate_entry(_entry(metric="acc", match="exact", aggregation=lambda v, s, w: sum(v)), results, ["t_a", "t_b"])
    assert out == {"acc,none": pytest.approx(1.2), "acc_stderr,none": "N/A"}


def test_match_must_be_a_known_mode() -> None:
    with pytest.raises(ValueError, match="match must be one of"):
        _entry(metric="acc", match="fuzzy")


# -- datasets -------------------------------------------------------------------------------------------


def test_loader_is_retried_for_network_errors_only() -> None:
    calls = []

    def flaky(metadata: Any = None, **kwargs: Any) -> dict[str, datasets.Dataset]:
        calls.append(kwargs)
        if len(calls) < 3:
            raise ConnectionError("reset by peer")
        return {"test": datasets.Dataset.from_list([{"x": 1}])}

    assert len(compat_datasets.load_splits(flaky, {"version": 1}, {"subset": "a"}, wait_s=0)["test"]) == 1
    assert calls == [{"subset": "a"}] * 3

    bad_calls = []

    def bad(metadata: Any = None, **kwargs: Any) -> None:
        bad_calls.append(1)
        raise ValueError("row 3: field 'q' is missing")

    with pytest.raises(ValueError, match="row 3"):  # raised once, unchanged (no RetryError)
        compat_datasets.load_splits(bad, None, None, wait_s=0)
    assert bad_calls == [1]


def test_media_columns_are_dropped_from_the_no_image_copy() -> None:
    features = datasets.Features({"q": datasets.Value("string"), "img": datasets.Image(), "imgs": datasets.Sequence(datasets.Image())})
    split = datasets.Dataset.from_dict({"q": ["a"], "img": [None], "imgs": [[]]}, features=features)
    copy = compat_datasets.without_media_columns(datasets.DatasetDict({"test": split}))
    assert copy["test"].column_names == ["q"]


# -- stderr and exit status ---------------------------------------------------------------------------


def test_an_aggregation_with_its_own_stderr_supplies_it() -> None:
    from lmms_eval.api.metrics import mean, stderr_for_metric

    def agg(items: list[float]) -> float:
        return sum(items) / len(items)

    agg.stderr = lambda items: 0.125  # type: ignore[attr-defined]
    assert stderr_for_metric(agg, bootstrap_iters=1000) is agg.stderr  # type: ignore[attr-defined]
    assert stderr_for_metric(agg, bootstrap_iters=0) is None  # stderrs switched off stay off
    assert stderr_for_metric(mean, bootstrap_iters=1000) is not None  # lmms-eval's own are unchanged


def test_exit_summary_names_each_incomplete_task(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(status, "_faults", [])
    status.record_incomplete("haerae_vision_original", "2 judge request(s) failed")
    status.record(status.Fault(status.EXIT_FAILED, "lmms-eval", "the evaluation failed"))
    assert status.exit_code() == status.EXIT_FAILED
    assert exit_status.summary_lines(status.exit_code()) == ["lmms-eval: exit status 4", "  - haerae_vision_original: 2 judge request(s) failed"]
