"""The compat layer: each shim backports exactly its patch's feature into lmms-eval 0.7.3 and leaves every
other task's behaviour alone. Through the real CLI the same features are exercised by every end-to-end
test; these tests pin each shim's semantics against the patch contract (docs/UPSTREAM.md)."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import datasets
import pytest

from lmms_tasks.utils import compat
from lmms_tasks.utils.compat import batch_scoring as compat_batch
from lmms_tasks.utils.compat import datasets as compat_datasets
from lmms_tasks.utils.compat import exit_status, groups, k_samples
from lmms_tasks.utils.services import status


@pytest.fixture(scope="module", autouse=True)
def activated() -> list[str]:
    return compat.activate()


def test_stock_lmms_eval_gets_every_backport_but_the_exit_status_outside_the_cli(activated: list[str]) -> None:
    # pytest is not the lmms-eval command: its exit status is not ours to change
    assert set(compat.installed()) == {s.NAME for s in compat.SHIMS} - {exit_status.NAME}
    assert compat.activate() == compat.installed()  # idempotent
    assert all(s.PATCHES for s in compat.SHIMS)  # each names the patch that retires it


def test_each_shim_names_the_patches_of_the_series_that_retire_it() -> None:
    """Every shim names patch files of the series (the one the upstream PRs target), and every patch whose
    feature stock 0.7.3 lacks is named by a shim (0009 is main's only: 0.7.3 has that feature)."""
    from lmms_tasks.utils.commands.upstream import series

    in_series = {p.stem for p in (series.SERIES_DIR / "main").glob("*.patch")}
    named = {patch for shim in compat.SHIMS for patch in shim.PATCHES}
    assert named <= in_series, sorted(named - in_series)
    assert in_series - named == {name for name, versions in series.ONLY_IN.items() if "0.7.3" not in versions}


def test_task_config_accepts_the_patched_fields() -> None:
    from lmms_eval.api.task import TaskConfig

    config = TaskConfig(task="t", strip_responses=False, custom_dataset=len, process_results_batch=list, score_each_repeat=True)
    assert config.strip_responses is False and config.custom_dataset is len and config["task"] == "t"
    assert config.process_results_batch is list and config.score_each_repeat is True
    # every added field defaults to None (strip_responses None strips, as before), so a plain task's saved config keeps its keys
    assert TaskConfig(task="t").strip_responses is None and TaskConfig(task="t").custom_dataset is None
    assert TaskConfig(task="t").process_results_batch is None and TaskConfig(task="t").score_each_repeat is None
    assert not {"strip_responses", "custom_dataset", "process_results_batch", "score_each_repeat"} & set(TaskConfig(task="t").to_dict())
    with pytest.raises(TypeError):
        TaskConfig(task="t", no_such_field=1)  # still strict about unknown keys
    assert {"strip_responses", "custom_dataset", "process_results_batch", "score_each_repeat"} <= {f.name for f in dataclasses.fields(TaskConfig)}


def _task(strip: bool | None, output_type: str = "generate_until") -> Any:
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


@pytest.mark.parametrize("strip", [True, None], ids=["true", "default-none"])
def test_strip_responses_true_or_unset_is_lmms_evals_own_strip(strip: bool | None) -> None:
    task, seen = _task(strip=strip)
    task.process_results({}, ["  x \n"])
    assert seen == [["x"]]


# -- groups ---------------------------------------------------------------------------------------------


def _entry(**fields: Any) -> Any:
    from lmms_eval.api.group import AggMetricConfig

    return AggMetricConfig(**fields)


RESULTS = {
    "t_a": {"acc,none": 0.5, "acc_stderr,none": 0.1, "acc_stderr_clt,none": 0.01, "pair_acc,none": 0.9, "pair_acc_stderr,none": 0.2, "samples": 10},
    "t_b": {"acc,none": 0.7, "acc_stderr,none": 0.2, "acc_stderr_clt,none": 0.02, "pair_acc,none": 0.1, "pair_acc_stderr,none": 0.2, "samples": 30},
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
    # the group's `.stderr` combines the subtasks' `_stderr_clt` into the group's `_stderr_clt`; the group's
    # `_stderr` is lmms-eval's pooled one of the subtasks' `_stderr`
    from lmms_eval.api.metrics import pooled_sample_stderr

    assert out == {
        "acc_b,none": 0.7,
        "acc_b_stderr_clt,none": pytest.approx(math.sqrt(0.01**2 + 0.02**2)),
        "acc_b_stderr,none": pytest.approx(pooled_sample_stderr([0.1, 0.2], [10, 30])),
    }
    assert calls == [["t_a", "t_b"]]


def test_an_aggregation_stderr_gets_na_stderrs_and_decides() -> None:
    def only_b(values: list[float], sizes: list[int], weight_by_size: bool, subtasks: list[str]) -> float:
        return dict(zip(subtasks, values))["t_b"]

    only_b.stderr = lambda stderrs, sizes, weight_by_size, subtasks: dict(zip(subtasks, stderrs))["t_b"]  # type: ignore[attr-defined]
    results = {**RESULTS, "t_a": {**RESULTS["t_a"], "acc_stderr,none": "N/A", "acc_stderr_clt,none": "N/A"}}  # t_a is not in this group number
    out = groups.aggregate_entry(_entry(metric="acc", group_metric="acc_b", aggregation=only_b), results, ["t_a", "t_b"])
    assert out == {"acc_b,none": 0.7, "acc_b_stderr_clt,none": 0.02, "acc_b_stderr,none": "N/A"}


def test_an_aggregation_stderr_declaring_values_gets_them() -> None:
    def gap(values: list[float], sizes: list[int], weight_by_size: bool, subtasks: list[str]) -> float:
        return values[1] - values[0]

    seen: list[Any] = []
    gap.stderr = lambda stderrs, sizes, weight_by_size, subtasks, values: seen.append((stderrs, values)) or 0.5  # type: ignore[attr-defined]
    out = groups.aggregate_entry(_entry(metric="acc", group_metric="gap", aggregation=gap), RESULTS, ["t_a", "t_b"])
    assert out["gap_stderr_clt,none"] == 0.5
    assert seen == [([0.01, 0.02], [0.5, 0.7])]


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


# -- no aggregation stderr, and exit status ---------------------------------------------------------------------------


def test_an_aggregation_stderr_attribute_is_not_lmms_evals_route() -> None:
    """No backport supplies a task aggregation's `stderr` any more (patch 0005 is gone): lmms-eval 0.7.3 gives
    a task-defined aggregation no bootstrap stderr, whatever it carries."""
    from lmms_eval.api.metrics import stderr_for_metric

    compat.activate()

    def agg(items: list[float]) -> float:
        return sum(items) / len(items)

    agg.stderr = lambda items: 0.125  # type: ignore[attr-defined]
    assert stderr_for_metric(agg, bootstrap_iters=1000) is None


def test_exit_summary_names_each_incomplete_task(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(status, "_faults", [])
    status.record_incomplete("haerae_vision_original", "2 judge request(s) failed")
    status.record(status.Fault(status.EXIT_FAILED, "lmms-eval", "the evaluation failed"))
    assert status.exit_code() == status.EXIT_FAILED
    assert exit_status.summary_lines(status.exit_code()) == ["lmms-eval: exit status 4", "  - haerae_vision_original: 2 judge request(s) failed"]


# -- batch scoring and k-samples (patches 0006, 0007) ---------------------------------------------------------


def _pair_batch(results: list[dict], args: Any = None, repeat: int | None = None) -> list[dict]:
    """A batch function scoring pairs of documents (doc i with doc i ^ 1): the pair's score on its even member."""
    by_index = {r["acc"]["i"]: r for r in results}
    out = []
    for result in results:
        i = result["acc"]["i"]
        new = dict(result)
        if i % 2 == 0 and i + 1 in by_index:
            score = float(result["acc"]["ok"] and by_index[i + 1]["acc"]["ok"])
            new["acc"] = {**result["acc"], "score": score, "repeat": repeat}
            new["unit"] = score
        out.append(new)
    return out


def _batch_task(batch: Any, repeats: int = 1, answers: dict[int, str] | None = None, score_each_repeat: bool = False) -> Any:
    answers = answers or {}
    config = SimpleNamespace(process_results_batch=batch, repeats=repeats, score_each_repeat=score_each_repeat)

    def process_results(doc: dict, results: list[str]) -> dict:
        item = {"i": doc["i"], "ok": results[0] == "yes"}
        return {"acc": item, "n": dict(item)}

    return SimpleNamespace(config=config, process_results=process_results, doc_to_target=lambda doc: "yes", args=SimpleNamespace(output_path=None),
                           aggregation=lambda: {"acc": lambda items: sum(i.get("score", 0) for i in items), "n": len})


def _request(responses: list[str]) -> Any:
    return SimpleNamespace(resps=list(responses), filtered_resps={}, raw_filtered_resps={}, args=("ctx",), token_counts=[], doc={})


def _evaluate_like_lmms_eval(task: Any, answers: dict[int, list[str]], filters: list[str], world_size: int) -> Any:
    """What evaluator.evaluate does around batch scoring: each rank processes its strided documents per filter
    through the (wrapped) `_process_document_results`, then rank 0 gathers rank by rank and aggregates."""
    from lmms_eval import evaluator
    from lmms_eval.evaluator_utils import TaskOutput

    ranks = []
    for rank in range(world_size):
        local = TaskOutput(task=task, task_name="pairs", task_config={"score_key": "score"})
        for filter_key in filters:
            for i in sorted(answers)[rank::world_size]:
                request = _request(answers[i])
                request.filtered_resps[filter_key] = answers[i][0]
                processed = evaluator._process_document_results((i, {"i": i}, [request]), task=task, filter_key=filter_key, reasoning_tags=None, log_samples=True)
                for metric, scores in processed.per_sample_scores.items():
                    local.per_sample_metrics[(metric, filter_key)].append(scores)
                local.logged_samples.append(processed.logged_sample)
                for metric, value in processed.metrics.items():
                    local.sample_metrics[(metric, filter_key)].append(value)
        ranks.append(local)
    output = TaskOutput(task=task, task_name="pairs", task_config={"score_key": "score", "repeats": task.config.repeats})
    for local in ranks:  # gather_object: rank 0's list, then rank 1's ...
        output.logged_samples += local.logged_samples
        for key, values in local.sample_metrics.items():
            output.sample_metrics[key] += values
        for key, values in local.per_sample_metrics.items():
            output.per_sample_metrics[key] += values
    output.calculate_aggregate_metric(bootstrap_iters=0)
    return output


@pytest.mark.parametrize("world_size", [1, 2])
def test_batch_scores_reach_metrics_and_samples_of_each_filter_across_ranks(world_size: int) -> None:
    answers = {0: ["yes"], 1: ["yes"], 2: ["yes"], 3: ["no"], 4: ["yes"], 5: ["yes"]}
    output = _evaluate_like_lmms_eval(_batch_task(_pair_batch), answers, ["none", "strict"], world_size)
    for filter_key in ("none", "strict"):
        scored = {item["i"]: item["score"] for item in output.sample_metrics[("acc", filter_key)] if "score" in item}
        assert scored == {0: 1.0, 2: 0.0, 4: 1.0}
        assert output.agg_metrics[f"acc,{filter_key}"] == 2.0  # the aggregation saw the scores
    assert not any(key[0] == compat_batch.DOC_ID for key in output.sample_metrics)  # the hidden doc ids are gone
    assert all(compat_batch.FILTER not in sample for sample in output.logged_samples)
    logged = {(s["doc_id"], s["acc"].get("score")) for s in output.logged_samples}
    assert logged == {(0, 1.0), (1, None), (2, 0.0), (3, None), (4, 1.0), (5, None)}
    assert sorted(s["unit"] for s in output.logged_samples if "unit" in s) == [0.0, 0.0, 1.0, 1.0, 1.0, 1.0]  # both filters
    assert ("unit", "none") not in output.sample_metrics  # not a metric: the samples only


def test_a_batch_function_that_declares_config_gets_the_task_config_in_every_call() -> None:
    """As patch 0006: `config=task.config` (what the YAML set, metadata included) for the documents and for
    each response index; a function without the parameter is called without it (the other tests)."""
    seen: list[tuple[int | None, Any]] = []

    def batch(results: list[dict], args: Any = None, repeat: int | None = None, config: Any = None) -> list[dict]:
        seen.append((repeat, config))
        return _pair_batch(results, args, repeat)

    task = _batch_task(batch, repeats=2, score_each_repeat=True)
    task.config.metadata = {"judge": {"model": "from-the-config"}}
    _evaluate_like_lmms_eval(task, {0: ["yes", "no"], 1: ["yes", "yes"]}, ["none"], 1)
    assert seen and all(config is task.config for _, config in seen)
    assert [repeat for repeat, _ in seen] == [None, 0, 1]


def test_samples_that_do_not_line_up_are_left_alone_with_a_warning(caplog_loguru: list[str]) -> None:
    from lmms_eval.evaluator_utils import TaskOutput

    task = _batch_task(_pair_batch)
    output = TaskOutput(task=task, task_name="pairs", task_config={})
    for i in range(2):
        output.sample_metrics[("acc", "none")].append({"i": i, "ok": True})
        output.sample_metrics[(compat_batch.DOC_ID, "none")].append(i)
        output.logged_samples.append({"doc_id": 1 - i, compat_batch.FILTER: "none"})  # another order
    output.calculate_aggregate_metric(bootstrap_iters=0)
    assert output.sample_metrics[("acc", "none")][0]["score"] == 1.0
    assert all("acc" not in s and compat_batch.FILTER not in s for s in output.logged_samples)
    assert any("do not line up" in line for line in caplog_loguru)


def test_k_samples_score_each_response_and_the_batch_sees_them_per_repeat(caplog_loguru: list[str]) -> None:
    import inspect

    from lmms_eval import evaluator

    # the probe: stock 0.7.3 scores no response on its own (the installed shim does, so the probe now passes)
    stock = inspect.unwrap(evaluator._process_document_results)
    task, request = k_samples._fake(2, ["a", "b"])
    assert stock((0, {}, [request]), task=task, filter_key="none", reasoning_tags=None, log_samples=False).per_sample_scores == {}
    assert k_samples.present() is True and k_samples.NAME in compat.installed()
    answers = {0: ["yes", "no", "yes"], 1: ["yes", "yes", "yes"], 2: ["no", "yes", "yes"], 3: ["yes", "yes", "no"]}
    output = _evaluate_like_lmms_eval(_batch_task(_pair_batch, repeats=3, score_each_repeat=True), answers, ["none"], 1)
    per_response = output.per_sample_metrics[("acc", "none")]
    assert [[r.get("score") for r in doc] for doc in per_response] == [[1.0, 0.0, 1.0], [None] * 3, [0.0, 1.0, 0.0], [None] * 3]
    assert [r["repeat"] for r in per_response[0]] == [0, 1, 2]
    output.calculate_stability_metrics()
    assert output.agg_metrics["acc_expected_accuracy,none"] == pytest.approx(3 / 6)
    assert output.agg_metrics["acc_consistency_rate,none"] == 0.0
    # "n" carries no score: no stability metrics for it, no warning, and its per-response values are kept
    assert "n_expected_accuracy,none" not in output.agg_metrics and ("n", "none") in output.per_sample_metrics
    assert not any("Stability metrics" in line for line in caplog_loguru)


def test_k_samples_cost_no_process_results_call_for_a_task_that_does_not_opt_in() -> None:
    """Under `--repeats K` a task without `score_each_repeat` is scored as without repeats (each call may be a
    paid judge call); one that sets it gets one more call per response."""
    from lmms_eval import evaluator

    def scored(repeats: int, responses: list[str], opt_in: bool) -> tuple[int, dict]:
        task, request = k_samples._fake(repeats, responses, score_each_repeat=opt_in)
        calls: list[list[str]] = []
        probe = task.process_results
        task.process_results = lambda doc, results: calls.append(results) or probe(doc, results)
        processed = evaluator._process_document_results((0, {}, [request]), task=task, filter_key="none", reasoning_tags=None, log_samples=False)
        return len(calls), processed.per_sample_scores

    assert k_samples.NAME in compat.installed()
    k = 3
    without_repeats = scored(1, ["a"], opt_in=False)
    assert without_repeats == (1, {})
    assert scored(k, ["a", "b", "a"], opt_in=False) == without_repeats  # not K + 1 calls
    assert scored(k, ["a", "b", "a"], opt_in=True) == (1 + k, {"probe": [1.0, 0.0, 1.0]})


@pytest.fixture
def caplog_loguru() -> Any:
    from loguru import logger

    lines: list[str] = []
    handler = logger.add(lambda message: lines.append(str(message)), level="WARNING")
    yield lines
    logger.remove(handler)


def test_a_local_baseline_gives_each_task_its_own_samples_file(tmp_path: Any) -> None:
    from lmms_eval import evaluator

    def samples(name: str, scores: list[float]) -> Any:
        path = tmp_path / "run" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f'{{"doc_id": {i}, "unit_score": {s}}}\n' for i, s in enumerate(scores)))
        return path

    a = samples("20250101_000000_samples_task_a.jsonl", [1.0, 0.0])
    samples("20250101_000000_samples_task_b.jsonl", [0.5])
    samples("20240101_000000_samples_task_b.jsonl", [0.25])  # older
    assert evaluator.load_baseline(str(a), "task_a")[0] == {0: 1.0, 1: 0.0}
    assert evaluator.load_baseline(str(a), "task_b")[0] == {0: 0.5}  # the sibling, not task a's scores
    assert evaluator.load_baseline(str(a), "a_group") == ({}, None)  # not evaluated by that run: not compared
    assert evaluator.load_baseline(str(tmp_path), "task_b")[0] == {0: 0.5}  # a directory: the newest file
    other = tmp_path / "mine.jsonl"
    other.write_text('{"doc_id": 0, "unit_score": 0.75}\n')
    assert evaluator.load_baseline(str(other), "task_z")[0] == {0: 0.75}  # any other file: as given


PARTIAL_FIRST = """
import json
from lmms_eval import evaluator
from lmms_eval.api.task import ConfigurableTask
from lmms_eval.evaluator_utils import TaskOutput
from lmms_tasks.utils import compat
from lmms_tasks.utils.compat import batch_scoring, task_config

compat.install(task_config)  # a third-party task that wants only these two backports is loaded first
compat.install(batch_scoring)
compat.install(batch_scoring)
compat.activate()  # then one of ours


def wrappers(function, module="lmms_tasks.utils.compat.batch_scoring"):
    count = 0
    while function is not None:
        count += function.__module__ == module
        function = getattr(function, "__wrapped__", None)
    return count


print(json.dumps({
    "installed": compat.installed(),
    "custom_dataset_loads": hasattr(ConfigurableTask.download, "__wrapped__"),
    "batch_step_wrappers": [wrappers(evaluator._process_document_results), wrappers(TaskOutput.calculate_aggregate_metric)],
    "backported_fields": list(getattr(__import__("lmms_eval.api.task").api.task.TaskConfig, task_config.BACKPORTED)),
}))
"""


def test_a_task_that_installed_some_backports_first_leaves_ours_every_backport_and_none_twice() -> None:
    """A third-party task that installs only the TaskConfig fields and the batch step (as the judge tests' mini
    task does) and is loaded before ours, in the same process: activation must still install the custom_dataset
    loader (the field is there, but lmms-eval does not load it) and must not wrap the batch step twice (every item
    would be scored twice). Before the fix, `media-stats` after an in-process `score` of such a task loaded no data."""
    out = subprocess.run([sys.executable, "-c", PARTIAL_FIRST], env=dict(os.environ), capture_output=True, text=True, timeout=300, check=True)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["installed"][:2] == ["task_config", "batch_scoring"] and "datasets" in seen["installed"] and "responses" in seen["installed"]
    assert len(seen["installed"]) == len(set(seen["installed"]))
    assert seen["custom_dataset_loads"] is True and seen["batch_step_wrappers"] == [1, 1]
    assert seen["backported_fields"] == ["strip_responses", "custom_dataset", "process_results_batch", "score_each_repeat"]
