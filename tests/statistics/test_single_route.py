"""One standard-error route per metric: lmms-eval's own CLT one (`<metric>_stderr_clt`, from the per-unit
scores the batch step writes). No task aggregation in lmms_tasks.utils brings its own `stderr` (the route
patch 0005 used to add, now gone); only group aggregations do, and the group mechanism (patch 0002) feeds
them the subtasks' `_stderr_clt`."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil

import lmms_tasks.utils as utils_package


def _modules():
    for info in pkgutil.walk_packages(utils_package.__path__, prefix="lmms_tasks.utils."):
        if ".testing" in info.name or ".commands" in info.name:
            continue
        yield importlib.import_module(info.name)


def _is_group_aggregation(fn) -> bool:
    """A group aggregation takes (values, sizes, weight_by_size, ...), as lmms-eval calls one."""
    try:
        parameters = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return False
    return parameters[1:3] == ["sizes", "weight_by_size"]


def test_only_group_aggregations_carry_a_stderr() -> None:
    with_stderr, groups = [], []
    for module in _modules():
        for name, value in vars(module).items():
            if inspect.isfunction(value) and value.__module__ == module.__name__ and callable(getattr(value, "stderr", None)):
                (groups if _is_group_aggregation(value) else with_stderr).append(f"{module.__name__}.{name}")
    assert with_stderr == []
    assert groups, "the check found no group aggregation with a stderr: it would pass on anything"


def test_the_aggregation_stderr_shim_is_gone() -> None:
    from lmms_tasks.utils import compat

    assert "stderr" not in {shim.NAME for shim in compat.SHIMS}
    assert importlib.util.find_spec("lmms_tasks.utils.compat.stderr") is None
