"""Keep a model response byte for byte on its way to a task's `process_results`.

lmms-eval 0.7.3 changes every `generate_until` response before a task's hook sees it, in two places:
- `evaluator._process_document_results` strips reasoning blocks with `reasoning_tags` (CLI default
  `<think>`/`<analysis>` pairs; `reasoning_tags: none` in the task YAML turns that off), and
  `strip_reasoning_tags` ends with `result.strip()`;
- `ConfigurableTask.process_results` then calls `res.strip()` on every response, unconditionally.

Where the official scorer reads the raw output (HumanEval-V's `post_process` glues an indented body-only
completion to the signature, so leading whitespace decides pass or fail), a task adds the `KeepRaw` filter
at the end of its filter pipelines and pins `reasoning_tags: none`. The filter wraps each response in
`RawResponse`, a `str` whose `strip()` family returns it unchanged, so the hook receives exactly what the
model produced. It pickles and serialises as a plain `str` (the samples file shows the raw text).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class RawResponse(str):
    """A response that lmms-eval's unconditional `.strip()` leaves as it is."""

    __slots__ = ()

    def strip(self, chars: str | None = None) -> RawResponse:  # type: ignore[override]
        return self

    def lstrip(self, chars: str | None = None) -> RawResponse:  # type: ignore[override]
        return self

    def rstrip(self, chars: str | None = None) -> RawResponse:  # type: ignore[override]
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (str, (str(self),))  # across ranks and into logs it travels as a plain string


def keep_raw(response: Any) -> Any:
    """Wrap one response (or each response of a `take_first_k` list); `None` becomes "" as lmms-eval does."""
    if isinstance(response, list):
        return [keep_raw(r) for r in response]
    if response is None:
        return RawResponse("")
    return RawResponse(response) if isinstance(response, str) else response


class KeepRaw:
    """lmms-eval filter (the last step of a `filter_list` pipeline): responses reach the hook unstripped.

    Used from YAML as `{function: !function utils.KeepRaw}`; lmms-eval instantiates it with no arguments
    and calls `apply(resps, docs)` with the previous step's per-document responses."""

    def __init__(self, **kwargs: Any) -> None:
        if kwargs:
            raise TypeError(f"KeepRaw takes no arguments, got {sorted(kwargs)}")

    def apply(self, resps: Iterable[Any], docs: Any) -> list[Any]:
        return [keep_raw(r) for r in resps]


def plain(response: Any) -> str:
    """The response as a plain `str` (what a hook stores and scores)."""
    return "" if response is None else str(response)
