"""The dependency bounds are the versions we test: `python_requires` admits only Pythons every exact pin
supports (by the pinned release's own classifiers), lmms-eval stays below its next minor release (utils/compat
patches its internals), and every upper cap in setup.cfg carries a comment saying why."""

from __future__ import annotations

import configparser
import importlib.metadata as md
import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

SETUP_CFG = Path(__file__).resolve().parents[2] / "setup.cfg"


def _options() -> configparser.SectionProxy:
    parser = configparser.ConfigParser()
    parser.read(SETUP_CFG, encoding="utf-8")
    return parser


def _requirements() -> list[Requirement]:
    parser = _options()
    lines = parser["options"]["install_requires"].splitlines()
    for extra in parser["options.extras_require"].values():
        lines += extra.splitlines()
    return [Requirement(line) for line in (raw.strip() for raw in lines) if line and not line.startswith("#")]


def _supported_minors(dist: str) -> set[int]:
    classifiers = md.metadata(dist).get_all("Classifier") or []
    return {int(m.group(1)) for c in classifiers if (m := re.fullmatch(r"Programming Language :: Python :: 3\.(\d+)", c))}


def test_python_requires_admits_only_what_every_exact_pin_supports() -> None:
    python = SpecifierSet(_options()["options"]["python_requires"])
    pins = [r for r in _requirements() if any(s.operator == "==" for s in r.specifier) and (r.marker is None or r.marker.evaluate())]
    assert {r.name for r in pins} >= {"pylint", "black"}
    admitted = {minor for minor in range(0, 40) if Version(f"3.{minor}") in python}
    assert admitted, python
    for req in pins:
        (version,) = [s.version for s in req.specifier if s.operator == "=="]
        if md.version(req.name) != version:
            pytest.skip(f"{req.name}=={version} is not the installed release ({md.version(req.name)})")
        supported = _supported_minors(req.name)
        if not supported:  # a release without Python classifiers states nothing to check against
            continue
        assert admitted <= set(range(min(admitted), max(supported) + 1)), (req.name, version, sorted(supported), str(python))


def test_lmms_eval_is_capped_below_its_next_minor_release() -> None:
    (req,) = [r for r in _requirements() if r.name == "lmms-eval"]
    assert Version("0.7.3") in req.specifier and Version("0.7.99") in req.specifier
    assert Version("0.7.2") not in req.specifier and Version("0.8.0") not in req.specifier
    assert md.version("lmms-eval") in req.specifier


def test_every_upper_cap_says_why() -> None:
    text = SETUP_CFG.read_text(encoding="utf-8").splitlines()
    capped = [i for i, line in enumerate(text) if re.search(r"(<(?!=)[\d.]+|==[\d.]+)", line) and not line.lstrip().startswith("#")]
    assert len(capped) >= 4
    for i in capped:
        # the comment is the nearest non-requirement line above: the requirement's own, or its block's
        j = i - 1
        while j >= 0 and re.match(r"\s+[A-Za-z0-9_.\-\[\]]+\s*[<>=!~]", text[j]) and not text[j].lstrip().startswith("#"):
            j -= 1
        if j >= 0 and re.fullmatch(r"[a-z_]+ =", text[j].strip()):
            j -= 1  # an extra's `name =` line: its comment is above it
        assert j >= 0 and text[j].lstrip().startswith("#"), f"setup.cfg line {i + 1} caps a version without a comment: {text[i].strip()}"
