"""Data revisions: every benchmark's loader takes a pinned revision from `<BENCH>_REVISION`, and what a run
actually loaded (the Hub commit, or the sha256 of each local data file) is written into results.json
(`configs.<task>.metadata.data_source`) and shown by `python -m lmms_tasks report`.

No network: the Hub side is checked on the resolution rules (a commit sha is itself; a branch resolves
through the Hugging Face cache's `refs/`), the local side through the real lmms-eval CLI on fixtures.
"""

from __future__ import annotations

import hashlib
import importlib
from pathlib import Path

import pytest

from lmms_tasks import BENCHMARKS
from lmms_tasks.utils.services import data as data_service
from lmms_tasks.utils.testing.e2e import offline_env, run_lmms_eval
from lmms_tasks.utils.testing.fixtures import haerae_vision as haerae_fixtures
from lmms_tasks.utils.testing.openai_server import StandInServer

SHA = "0123456789abcdef0123456789abcdef01234567"


def sources() -> dict[str, data_service.DataSource]:
    """Every DataSource the loaders use, found by content: each benchmark library's module-level `SOURCE`."""
    found = {}
    for module in ("vlm2_bench.data", "humaneval_v.hooks", "humaneval_v.v1", "haerae_vision.data"):
        source = importlib.import_module(f"lmms_tasks.utils.{module}").SOURCE
        found[source.name] = source
    return found


def test_every_benchmark_has_a_source_with_a_revision_variable() -> None:
    found = sources()
    assert {name.removesuffix("1") for name in found} == set(BENCHMARKS)
    assert {s.revision_var for s in found.values()} == {"VLM2_BENCH_REVISION", "HUMANEVAL_V_REVISION", "HUMANEVAL_V1_REVISION", "HAERAE_VISION_REVISION"}


@pytest.mark.parametrize("name", ["vlm2_bench", "humaneval_v", "humaneval_v1", "haerae_vision"])
def test_revision_variable_overrides_the_built_in_revision(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    source = sources()[name]
    monkeypatch.delenv(source.revision_var, raising=False)
    monkeypatch.delenv(source.env_var, raising=False)
    assert source.revision == source.default_revision
    monkeypatch.setenv(source.revision_var, SHA)
    assert source.revision == SHA and source.pinned
    assert source.describe() == f"hf://datasets/{source.repo_id}@{SHA}"
    assert source.provenance("test") == {"source": "hub", "repo_id": source.repo_id, "revision": SHA, "revision_var": source.revision_var, "commit": SHA}


def test_hub_parquet_load_asks_for_the_variable_revision(monkeypatch: pytest.MonkeyPatch) -> None:
    source = sources()["haerae_vision"]
    monkeypatch.delenv(source.env_var, raising=False)
    monkeypatch.setenv(source.revision_var, SHA)
    asked = {}

    def fake_load(repo: str, **kwargs: object) -> list[int]:
        asked.update(kwargs, repo=repo)
        return [1]

    monkeypatch.setattr(data_service.datasets, "load_dataset", fake_load)
    data_service.load_parquet_split(source, "train")
    assert asked["repo"] == source.repo_id and asked["revision"] == SHA


def test_branch_revision_resolves_through_the_hf_cache_refs(tmp_path: Path) -> None:
    refs = tmp_path / "datasets--HAERAE-HUB--HAERAE-VISION" / "refs"
    assert data_service.hub_commit("HAERAE-HUB/HAERAE-VISION", "main", cache_dir=tmp_path) is None  # nothing cached: not reported
    refs.mkdir(parents=True)
    (refs / "main").write_text(SHA, encoding="utf-8")
    assert data_service.hub_commit("HAERAE-HUB/HAERAE-VISION", "main", cache_dir=tmp_path) == SHA
    (refs / "main").write_text("not-a-sha", encoding="utf-8")
    assert data_service.hub_commit("HAERAE-HUB/HAERAE-VISION", "main", cache_dir=tmp_path) is None


# -- through the real CLI ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def haerae_run(tmp_path_factory: pytest.TempPathFactory):
    work = tmp_path_factory.mktemp("revisions")
    fixtures = haerae_fixtures.write(work / "data")
    with StandInServer(default_reply="") as server:
        haerae_fixtures.script_demo(server, fixtures)
        env = offline_env(server.base_url, work, data_env=fixtures.env)
        result = run_lmms_eval(["haerae_vision_original"], server.base_url, work / "results", env=env, in_process=True)
    result.check()
    return work, fixtures, result


@pytest.mark.e2e
def test_local_data_hashes_are_in_the_results_and_the_report(haerae_run, tmp_path: Path) -> None:
    work, fixtures, result = haerae_run
    root = Path(fixtures.env["HAERAE_VISION_DATA"])
    expected = {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((root / "data").glob("*.parquet"))}
    assert expected
    record = result.results["configs"]["haerae_vision_original"]["metadata"]["data_source"]
    assert record["source"] == "local" and record["env_var"] == "HAERAE_VISION_DATA"
    assert record["files"] == expected

    from lmms_tasks.utils.commands.report import main as report_main

    assert report_main([str(work / "results"), "--out", str(tmp_path / "report")]) == 0
    markdown = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    section = markdown.split("<!-- table: data -->", 1)[1]
    row = next(line for line in section.splitlines() if "`haerae_vision_original`" in line)
    for name, digest in expected.items():
        assert f"`{name}` `{digest}`" in row
    html = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    assert all(digest in html for digest in expected.values())


@pytest.mark.e2e
def test_printed_table_names_the_task(haerae_run) -> None:
    """lmms-eval prints a task's alias in its table: grepping the output for the task name finds its row."""
    _, _, result = haerae_run
    rows = [line for line in result.stdout.splitlines() if line.startswith("|") and "haerae_vision_score" in line]
    assert rows and all("haerae_vision_original" in row for row in rows), result.stdout[-3000:]


# -- issue 43: the commit recorded is the one the revision ASKED FOR resolved to --------------------------------

SHA_MAIN = "1111111111111111111111111111111111111111"
SHA_DEV = "2222222222222222222222222222222222222222"


def _refs(cache: Path, repo_id: str, refs: dict[str, str]) -> None:
    folder = cache / f"datasets--{repo_id.replace('/', '--')}" / "refs"
    folder.mkdir(parents=True, exist_ok=True)
    for name, commit in refs.items():
        (folder / name).write_text(commit + "\n", encoding="utf-8")


@pytest.mark.parametrize(
    ("revision", "commit"),
    [("dev", SHA_DEV), ("main", SHA_MAIN), ("v3", None), (SHA_DEV, SHA_DEV), ("refs-pr-1", None)],
)
def test_each_revision_resolves_through_its_own_ref(revision: str, commit: str | None, tmp_path: Path) -> None:
    _refs(tmp_path, "owner/name", {"main": SHA_MAIN, "dev": SHA_DEV})
    _refs(tmp_path, "owner/other", {"v3": SHA_MAIN})  # another repository's ref of that name says nothing here
    assert data_service.hub_commit("owner/name", revision, cache_dir=tmp_path) == commit


@pytest.mark.parametrize("name", ["vlm2_bench", "humaneval_v", "humaneval_v1", "haerae_vision"])
def test_the_recorded_commit_is_the_asked_revisions(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    source = sources()[name]
    monkeypatch.delenv(source.env_var, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    default_commit = source.default_revision if data_service.COMMIT.fullmatch(source.default_revision) else SHA_MAIN
    _refs(tmp_path, source.repo_id, {"dev": SHA_DEV, "main": SHA_MAIN, source.default_revision: default_commit})
    monkeypatch.setenv(source.revision_var, "dev")
    assert source.provenance("test") == {"source": "hub", "repo_id": source.repo_id, "revision": "dev", "revision_var": source.revision_var, "commit": SHA_DEV}
    monkeypatch.delenv(source.revision_var)
    found = source.provenance("test")
    assert (found["revision"], found["commit"]) == (source.default_revision, default_commit)
