"""HumanEval-V v1 post-processing (the 108-task release, upstream commit `00d2cf2`, `evaluate.post_process`).

v1 differs from v2 (`extraction.py`) in one branch only: with two or more ```python blocks, v1 walks the
pieces of `reply.split("```python")` forwards, the text before the first fence included, keeps each piece
holding exactly one closing fence and concatenates the code before those fences, with no separator (empty
when none qualifies); v2 picks one block. Every other rule is shared with v2 and reused from there: one
```python block (unclosed = the rest of the reply), ``` python with a space (first block only), bare fences
(one = the text before it, two or more = between the first two, none = `    pass`), the body-only rule,
the AST filter, raw text on a parse error, and the program layout.

The official v1 example models stop generation at "\\n```\\n" and return the text before it (`stop_at_fence`);
the hooks apply that cut to every reply so all backends score the same text (see the task README).
"""

from __future__ import annotations

from lmms_tasks.utils.humaneval_v import extraction
from lmms_tasks.utils.humaneval_v.extraction import STUB_BODY

PYTHON_FENCE = "```python"
FENCE = "```"
# The stop string of the official v1 example models (`models/openai_model.py`, `models/vllm_model.py`).
STOP = "\n```\n"


def stop_at_fence(reply: str) -> str:
    """The reply as the official v1 example models return it: cut before the first "\\n```\\n" (the stop
    string itself is not returned, by the OpenAI API nor by vLLM's default)."""
    index = reply.find(STOP)
    return reply if index < 0 else reply[:index]


def select_content(prediction: str) -> str:
    """The code text v1 takes from a reply (before the body-only rule and the AST filter)."""
    if PYTHON_FENCE in prediction:
        pieces = prediction.split(PYTHON_FENCE)
        if len(pieces) == 2:  # exactly one ```python: up to the next fence, or the rest of the reply
            return pieces[1].split(FENCE)[0]
        # v1: concatenate every piece (preamble included) that holds exactly one closing fence, in order
        return "".join(piece.split(FENCE)[0] for piece in pieces if piece.count(FENCE) == 1)
    if "``` python" in prediction:
        return prediction.split("``` python")[1].split(FENCE)[0]
    plain = prediction.count(FENCE)
    if plain == 1:
        return prediction.split(FENCE)[0]  # the model continued the body and closed the fence
    if plain >= 2:
        return prediction.split(FENCE)[1]
    return STUB_BODY


def post_process(prediction: str, signature: str, test_script: str) -> tuple[str, str]:
    """(completion, program) exactly as v1's `post_process`: v2's steps (`extraction.post_process`) with
    v1's choice of the code text."""
    return extraction.post_process(prediction, signature, test_script, select=select_content)
