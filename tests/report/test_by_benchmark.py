"""The report by benchmark (issue 54): each benchmark's section, headline and plots are the module of the
report package named after it; the shared modules name a benchmark at most 10 times in all."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from lmms_tasks import BENCHMARKS
from lmms_tasks.utils.commands.report import sections

REPORT = Path(sections.__file__).parent
NAMES = re.compile(r"vlm2|humaneval|haerae", re.IGNORECASE)


def test_each_benchmark_has_its_own_section_module() -> None:
    modules = [importlib.import_module(f"lmms_tasks.utils.commands.report.{name}") for name in BENCHMARKS]
    assert list(sections.BENCHMARK_MODULES) == modules
    for module in modules:
        assert callable(module.section) and callable(module.headline) and module.PLOTS and module.UNIT_NOTE
    assert sections.PLOT_NAMES == (*(p for m in modules for p in m.PLOTS), "health")


def test_the_shared_modules_name_a_benchmark_at_most_ten_times() -> None:
    shared = sorted(p for p in REPORT.glob("*.py") if p.stem not in BENCHMARKS)
    assert {p.stem for p in shared} >= {"sections", "common", "plots", "runs", "tables"}
    counts = {p.name: len(NAMES.findall(p.read_text(encoding="utf-8"))) for p in shared}
    assert sum(counts.values()) <= 10, counts


def test_a_task_of_no_benchmark_has_no_headline() -> None:
    assert sections.headline_of("mmmu_val") is None
    assert sections.headline_of("haerae_vision_original").unit == "item"
    assert sections.headline_of("humaneval_v_v2c_pass3").metric == "pass@3"
