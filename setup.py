"""Packages of the one installed top-level package `lmms_tasks`, from setup.cfg's `package_dir` (import path ->
repository folder), less the developer tools listed under `[lmms_tasks.not_installed]` (run from a checkout)."""

import configparser
import warnings
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.warnings import InformationOnly

HERE = Path(__file__).resolve().parent


def declared_layout(cfg: Path = HERE / "setup.cfg") -> tuple[dict[str, str], list[str]]:
    """({import path: folder}, [packages left out of the wheel]) as setup.cfg declares them."""
    parser = configparser.ConfigParser()
    parser.read(cfg, encoding="utf-8")
    lines = [line.split("=", 1) for line in parser["options"]["package_dir"].strip().splitlines()]
    mapping = {name.strip(): folder.strip() for name, folder in lines}
    return mapping, parser["lmms_tasks.not_installed"]["packages"].split()


def packages(mapping: dict[str, str], not_installed: list[str]) -> list[str]:
    """Every package under each mapped folder (a nested mapped folder is its own entry), less `not_installed`
    and their subpackages; a mapped folder without `__init__.py` (yaml_templates/) is a data package."""
    found = set(mapping)
    for name, folder in mapping.items():
        nested = {other for other in mapping if other.startswith(name + ".")}
        for sub in find_packages(where=str(HERE / folder)):
            full = f"{name}.{sub}"
            if not any(full == n or full.startswith(n + ".") for n in nested):
                found.add(full)
    return sorted(p for p in found if not any(p == n or p.startswith(n + ".") for n in not_installed))


# `pip install -e .` maps lmms_tasks.utils to utils/ through setuptools' import finder (a .pth adding the
# repository root instead would make a bare `utils` importable everywhere: docs/DEVELOPING.md). setuptools then
# prints an information-only warning that a folder named like the package in the working directory may take
# precedence on import; here that folder (lmms_tasks/) is the package itself, so the note has nothing to say.
warnings.filterwarnings("ignore", message="Editable installation", category=InformationOnly)

if __name__ == "__main__":
    setup(packages=packages(*declared_layout()))
