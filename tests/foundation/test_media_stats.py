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
