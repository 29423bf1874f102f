"""`media-stats` counts the images each request really carries (what vLLM's limit_mm_per_prompt must cover)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from lmms_tasks.utils.commands.media_stats import count_images, media_stats
from lmms_tasks.utils.testing.fixtures import haerae_vision


def test_count_images_counts_image_and_video_parts_only() -> None:
    messages = [
        {"role": "system", "content": [{"type": "text", "text": "s"}]},
        {"role": "user", "content": [{"type": "text", "text": "q"}, {"type": "image", "url": "a.png"}, {"type": "image", "url": "b.png"}, {"type": "video", "url": "c.mp4"}]},
    ]
    assert count_images(messages) == 3


def test_media_stats_match_the_fixture_records(hermetic_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fixtures = haerae_vision.write(hermetic_env / "haerae")
    for key, value in fixtures.env.items():
        monkeypatch.setenv(key, value)
    table = pq.read_table(next((hermetic_env / "haerae" / "data").glob("*.parquet")))
    per_record = [len(images) for images in table.column("images").to_pylist()]
    (stats,) = media_stats(["haerae_vision_original"])
    assert (stats.docs, stats.min_images, stats.max_images) == (len(per_record), min(per_record), max(per_record))
    assert stats.mean_images == round(sum(per_record) / len(per_record), 2)


def test_media_stats_hands_the_loader_the_inspecting_fact_in_the_metadata(hermetic_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """HumanEval-V's code-execution opt-in guards an evaluation only: media-stats measures a v2c task without it,
    because it builds the task with `inspecting_documents: true` in the metadata lmms-eval hands the loader (no
    process-wide flag), so the same loader called with the YAML's metadata still refuses, during and after."""
    from lmms_tasks.utils.commands.media_stats import inspected_tasks
    from lmms_tasks.utils.humaneval_v import hooks
    from lmms_tasks.utils.humaneval_v.execution import CodeExecutionNotAllowed
    from lmms_tasks.utils.services.status import INSPECTING, inspecting
    from lmms_tasks.utils.testing.fixtures import humaneval_v

    monkeypatch.setenv("HUMANEVAL_V_DATA", humaneval_v.write(hermetic_env / "hev").env["HUMANEVAL_V_DATA"])
    monkeypatch.delenv("HUMANEVAL_V_ALLOW_CODE_EXECUTION", raising=False)
    (stats,) = media_stats(["humaneval_v_v2c"])
    assert stats.task == "humaneval_v_v2c" and stats.docs > 0 and stats.max_images == 1
    (task,) = inspected_tasks(["humaneval_v_v2c"]).values()
    assert task.config.metadata[INSPECTING] is True and task.config.metadata["version"] is not None  # added to the YAML's
    with pytest.raises(CodeExecutionNotAllowed):
        hooks.load_subtask(metadata={"version": 1}, subtask="v2c", setting="v2c")  # a run's metadata: the opt-in applies
    assert len(hooks.load_subtask(metadata={INSPECTING: True}, subtask="v2c", setting="v2c")["test"]) == stats.docs
    assert not inspecting({}) and not inspecting(None) and not inspecting({INSPECTING: "yes"}) and inspecting({INSPECTING: True})


def test_media_stats_expands_groups_and_tags_to_their_tasks(hermetic_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lmms_tasks.utils.commands.media_stats import inspected_tasks

    fixtures = haerae_vision.write(hermetic_env / "haerae")
    for key, value in fixtures.env.items():
        monkeypatch.setenv(key, value)
    group = inspected_tasks(["haerae_vision", "haerae_vision_original"])
    assert sorted(group) == ["haerae_vision_explicit", "haerae_vision_original"]  # each task once
    assert all(type(task).__name__ == "ConfigurableMessagesTask" for task in group.values())  # as a chat model gets them
    with pytest.raises(KeyError, match="no_such_task"):
        inspected_tasks(["no_such_task"])
