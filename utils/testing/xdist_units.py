"""How the test suite's tests are shared out between pytest-xdist workers (`--dist loadgroup`; tests/conftest.py).

A worker takes whole groups ("units"), one at a time, in the order the collection gives them:

- a module whose tests share a fixture scoped to the module (or a class, or a package: one lmms-eval run shared
  by its tests) is one unit, so that fixture is built once; every other test is a unit of its own, so a module of
  long independent cases (the exit matrix, one case per PR of the upstream stack) spreads over the workers;
- the units are queued longest first (the estimate: a module's measured seconds, shared out over its tests by
  their markers; a few seconds for modules without a figure), after the units named first, in their order.
The session fixtures that cost minutes are built once per run whichever workers ask (utils/testing/built_once.py),
so they need no common unit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

LONG_MARKERS = ("slow", "e2e", "hf_backend")
SHARED_SCOPES = ("module", "class", "package")
SECONDS_PER_TEST = 0.5  # a module without a measured figure: per test of weight 1


def module_of(item: pytest.Item) -> str:
    return item.nodeid.split("::")[0]


def shares_module_fixtures(item: pytest.Item) -> bool:
    """Whether the test uses a fixture built once per module (or class, or package)."""
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.values() if info is not None else ()
    return any(fixturedefs and fixturedefs[-1].scope in SHARED_SCOPES for fixturedefs in defs)


def weight(item: pytest.Item) -> float:
    """A test's share of its module's time: a slow, end-to-end or real-backend test weighs 20, any other 1."""
    return 20.0 if any(item.get_closest_marker(name) for name in LONG_MARKERS) else 1.0


def plan(items: list[pytest.Item], module_seconds: Mapping[str, float], first: Sequence[str], reorder: bool) -> dict[str, list[pytest.Item]]:
    """Mark each test with its unit (`pytest.mark.xdist_group`) and, with `reorder`, put `items` in queue order:
    the units holding a test (node id without parameters) or module named in `first`, in that order, then the
    rest by estimated seconds, longest first. Returns the units in queue order."""
    together = {module_of(item) for item in items if shares_module_fixtures(item)}
    weights: dict[str, float] = {}
    for item in items:
        weights[module_of(item)] = weights.get(module_of(item), 0.0) + weight(item)
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        module = module_of(item)
        unit = module if module in together else f"{module}#{len(units)}"
        units.setdefault(unit, []).append(item)
        item.add_marker(pytest.mark.xdist_group(unit))

    def seconds(unit: str) -> float:
        module = module_of(units[unit][0])
        total = module_seconds.get(module, SECONDS_PER_TEST * weights[module])
        return total * sum(weight(item) for item in units[unit]) / weights[module]

    def rank(unit: str) -> int:
        names = {module_of(units[unit][0])} | {item.nodeid.split("[")[0] for item in units[unit]}
        return next((i for i, name in enumerate(first) if name in names), len(first))

    if not reorder:
        return units
    ordered = sorted(units, key=lambda unit: (rank(unit), -seconds(unit)))
    items[:] = [item for unit in ordered for item in units[unit]]
    return {unit: units[unit] for unit in ordered}
