"""YAML export: out-of-folder includes are inlined so the folder is self-contained, in-folder includes and
comments stay, `!function pkg.…` tags point at the exported modules, and lmms-eval's own loader reads
the exported files to the same configuration as the originals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from lmms_tasks.utils.commands.upstream.sources import ExportError, SourceTree
from lmms_tasks.utils.commands.upstream.yamlexport import export_yaml


def _mapped(dotted: str) -> str:
    return dotted.replace("minipkg.utils.mybench.", "lmms_eval.tasks.mybench.lib.") if dotted.startswith("minipkg.") else dotted


def _export_folder(tree: SourceTree, out: Path) -> dict[str, str]:
    folder = tree.benchmark_dir("mybench")
    texts = {}
    for name in ("_default_template_yaml", "mybench_a.yaml", "mybench_b.yaml", "mybench.yaml"):
        texts[name] = export_yaml(folder / name, folder, _mapped)
        (out / name).write_text(texts[name], encoding="utf-8")
    (out / "_source.jsonl").write_text((folder / "_source.jsonl").read_text())
    return texts


def _plain(value: Any, tag_map=lambda s: s) -> Any:
    """lmms-eval's simple mode keeps `!function` as a yaml node: compare by its text."""
    if isinstance(value, yaml.Node):
        return "!function " + tag_map(value.value)
    if isinstance(value, dict):
        return {k: _plain(v, tag_map) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v, tag_map) for v in value]
    return value


def test_template_include_is_inlined_with_its_comment_and_tags_kept(mini_tree: SourceTree, tmp_path: Path) -> None:
    texts = _export_folder(mini_tree, tmp_path)
    template = texts["_default_template_yaml"]
    assert "include" not in template and "yaml_templates" not in template
    assert "# --- keys inlined from the shared template base ---\n# Data keys every task shares.\n" in template
    assert template.startswith("# Shared by the MyBench tasks.\n")
    assert "# Data keys every task shares.\ndataset_path: json\n" in template
    assert "process_results: !function utils.process_results\n" in template
    assert texts["mybench_a.yaml"].splitlines()[1] == "include: _default_template_yaml"
    assert "process_docs: !function lmms_eval.tasks.mybench.lib.hooks.process_docs" in texts["mybench_a.yaml"]
    assert texts["mybench.yaml"] == (mini_tree.benchmark_dir("mybench") / "mybench.yaml").read_text()


def test_lmms_eval_loads_exported_yaml_to_the_original_configuration(mini_tree: SourceTree, tmp_path: Path) -> None:
    from lmms_eval.utils import load_yaml_config

    _export_folder(mini_tree, tmp_path)
    folder = mini_tree.benchmark_dir("mybench")
    for name in ("mybench_a.yaml", "mybench_b.yaml", "_default_template_yaml"):
        original = _plain(load_yaml_config(str(folder / name), mode="simple"), _mapped)
        exported = _plain(load_yaml_config(str(tmp_path / name), mode="simple"))
        # data_files resolve to each folder's own _source.jsonl
        assert original["dataset_kwargs"]["data_files"]["test"] == str(folder / "_source.jsonl")
        assert exported["dataset_kwargs"]["data_files"]["test"] == str(tmp_path / "_source.jsonl")
        for config in (original, exported):
            config["dataset_kwargs"] = {}
        assert exported == original
        assert exported["test_split"] == "test" and exported["generation_kwargs"] == {"max_new_tokens": 16}


def test_keys_of_the_including_file_win_over_inlined_ones(mini_tree: SourceTree) -> None:
    folder = mini_tree.benchmark_dir("mybench")
    (folder / "override.yaml").write_text("task: mybench_c\ninclude: ../yaml_templates/base\ntest_split: validation\n")
    text = export_yaml(folder / "override.yaml", folder, _mapped)
    loaded = yaml.safe_load(text)
    assert loaded["test_split"] == "validation" and loaded["dataset_path"] == "json" and "include" not in loaded
    assert text.count("test_split") == 1


def test_inlining_that_would_change_precedence_is_refused(mini_tree: SourceTree) -> None:
    folder = mini_tree.benchmark_dir("mybench")
    (folder / "_local_yaml").write_text("dataset_path: parquet\n")
    (folder / "clash.yaml").write_text("task: mybench_d\ninclude: [_local_yaml, ../yaml_templates/base]\n")
    with pytest.raises(ExportError, match=r"clash\.yaml: inlining .* would override \['dataset_path'\]"):
        export_yaml(folder / "clash.yaml", folder, _mapped)
    # listed the other way round the template loses anyway, so inlining it is faithful
    (folder / "fine.yaml").write_text("task: mybench_e\ninclude: [../yaml_templates/base, _local_yaml]\n")
    text = export_yaml(folder / "fine.yaml", folder, _mapped)
    assert "include: _local_yaml" in text and "dataset_path: json" in text


def test_missing_include_names_the_file(mini_tree: SourceTree) -> None:
    folder = mini_tree.benchmark_dir("mybench")
    (folder / "bad.yaml").write_text("task: mybench_f\ninclude: ../yaml_templates/absent\n")
    with pytest.raises(ExportError, match="included file '../yaml_templates/absent' does not exist"):
        export_yaml(folder / "bad.yaml", folder, _mapped)
