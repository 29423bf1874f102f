"""Package list for setup.cfg: the repository keeps the shared library in utils/ and the YAML pieces in
yaml_templates/, but installs both inside the single top-level package `lmms_tasks`."""

from setuptools import find_packages, setup

packages = find_packages(include=["lmms_tasks", "lmms_tasks.*"], exclude=["lmms_tasks.yaml_templates*"])
packages += ["lmms_tasks.utils"] + [f"lmms_tasks.utils.{name}" for name in find_packages(where="utils")]
packages += ["lmms_tasks.yaml_templates"]

setup(
    packages=packages,
    package_dir={"lmms_tasks.utils": "utils", "lmms_tasks.yaml_templates": "yaml_templates"},
)
