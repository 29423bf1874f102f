"""Official HumanEval-V post-processing (`evaluate.post_process`): pick the code block, keep only the
top-level defs and every import, and build the program that is gated and executed.

Reproduced rule for rule, quirks included (spec 2.5, quirks H1-H5): unfenced code is never used; with
several ```python blocks the last one containing `def solution` wins, else the earliest closed one;
body-only completions are glued to the signature; the AST filter drops top-level statements.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

STUB_BODY = "    pass"


def select_content(prediction: str) -> str:
    """The code text the official scorer takes from a model reply (before the AST filter)."""
    fence = "```python"
    if fence in prediction:
        pieces = prediction.split(fence)
        if len(pieces) == 2:
            return pieces[1].split("```")[0]
        fallbacks: list[str] = []
        for piece in reversed(pieces):  # the preamble before the first fence takes part too
            if piece.count("```") != 1:
                continue
            body = piece.split("```")[0]
            if "def solution" in piece:
                return body
            fallbacks.append(body)
        return fallbacks[-1] if fallbacks else STUB_BODY
    if "``` python" in prediction:
        return prediction.split("``` python")[1].split("```")[0]
    plain = prediction.count("```")
    if plain == 1:
        return prediction.split("```")[0]  # the model continued the body and closed the fence
    if plain >= 2:
        return prediction.split("```")[1]
    return STUB_BODY


class _TopLevelCollector(ast.NodeVisitor):
    """Collects, in traversal order, every import anywhere and each def/class without a def/class parent."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.enclosing: list[ast.AST] = []

    def visit_Import(self, node: ast.Import) -> None:
        self.parts.extend(f"import {a.name}" + (f" as {a.asname}" if a.asname else "") for a in node.names)
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        # Relative-import dots are lost, as officially (`node.module` only).
        module = node.module or ""
        self.parts.extend(f"from {module} import {a.name}" + (f" as {a.asname}" if a.asname else "") for a in node.names)
        self.generic_visit(node)

    def _definition(self, node: ast.FunctionDef | ast.ClassDef) -> None:
        if not self.enclosing:
            self.parts.append(ast.unparse(node))
        self.enclosing.append(node)
        self.generic_visit(node)
        self.enclosing.pop()

    visit_FunctionDef = _definition
    visit_ClassDef = _definition


def filter_top_level(content: str) -> str:
    """The official AST filter; raises SyntaxError (or RecursionError, ValueError) like `ast.parse`."""
    collector = _TopLevelCollector()
    collector.visit(ast.parse(content))
    return "\n".join(collector.parts)


def post_process(prediction: str, signature: str, test_script: str, select: Callable[[str], str] = select_content) -> tuple[str, str]:
    """(completion, program): the extracted code, and signature stub + completion + test script. `select`
    picks the code text from the reply (v1 passes its own rule; every later step is the same in v1 and v2)."""
    if not signature.endswith("\n"):
        signature += "\n"
    content = select(prediction)
    if content.startswith(("\n  ", "  ")):  # body-only completion
        content = signature + content
    try:
        completion = filter_top_level(content)
    except Exception:  # noqa: BLE001 - official: any parse failure keeps the raw text (pylint then fails it)
        completion = content
    return completion, signature + STUB_BODY + "\n\n" + completion + "\n\n" + test_script
