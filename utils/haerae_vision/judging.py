"""The official checklist judge: its message, built byte for byte, and its score parser.

Message (quirk K1): the official `score.py` concatenates the template, whose `{{QUESTION}}`,
`{{RESPONSE}}` and `{{CHECKLIST}}` placeholders are never substituted, with an appended block:
`template + "[INPUT]\\n" + question + "\\n[Response]\\n" + response + "\\n[Checklist]\\n" + checklist + "\\n"`,
sent as one user turn with no system prompt and no request parameters. The three values are rendered as
the official CSV round trip renders them (`render.py`); the question is the variant the model saw (K10).

Parser (quirks K4, K5): exactly one `<score>` tag matching the official SCORE_RE, either `num/den` or a
single number, each reduced with `Fraction(...).limit_denominator(100000)`; zero tags, several tags or a
zero denominator give None; the value is not clipped.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from fractions import Fraction

from lmms_tasks.utils.haerae_vision.render import csv_cell, csv_cells
from lmms_tasks.utils.services.prompts import prompt, prompt_sha256

TEMPLATE_KEY = "haerae/judge/prompt_template"
SCORE_RE_KEY = "haerae/judge/SCORE_RE"
MAX_DENOMINATOR = 100000  # official parse_single_score default
DEFAULT_JUDGE_MODEL = "gpt-5-mini"  # official score.py --model default
JUDGE_PARAMS: dict[str, object] = {}  # official call passes none: API defaults (temperature 1 for GPT-5)


def template() -> str:
    return prompt(TEMPLATE_KEY)


def template_sha256() -> str:
    return prompt_sha256(TEMPLATE_KEY)


@functools.lru_cache(maxsize=1)
def score_re() -> re.Pattern[str]:
    """The official pattern, compiled with the official flags (the pattern text is data)."""
    return re.compile(prompt(SCORE_RE_KEY), re.IGNORECASE | re.DOTALL)


def assemble_message(question_cell: str, response_cell: str, checklist_cell: str) -> str:
    """The official concatenation of the template and the three already-rendered CSV cells."""
    return f"{template()}[INPUT]\n{question_cell}\n[Response]\n{response_cell}\n[Checklist]\n{checklist_cell}\n"


def judge_message(question_used: str, response: str, checklist_text: str) -> str:
    """The exact user-message text the official scorer sends for one item.

    Arguments are the values as the model run produced them (question variant, cleaned response,
    checklist text from `render.render_checklist`); each passes through the CSV round trip here.
    """
    return assemble_message(csv_cell(question_used), csv_cell(response), csv_cell(checklist_text))


def judge_message_batch(rows: Sequence[tuple[str, str, str]]) -> list[str]:
    """`judge_message` for many (question_used, response, checklist_text) rows, one CSV round trip per
    column as in the official run (and much faster than one per cell)."""
    if not rows:
        return []
    questions, responses, checklists = (csv_cells([row[i] for row in rows]) for i in range(3))
    return [assemble_message(q, r, c) for q, r, c in zip(questions, responses, checklists)]


def judge_messages(question_used: str, response: str, checklist_text: str) -> list[dict[str, str]]:
    """The chat messages of one judge call: a single user turn, content as a plain string."""
    return [{"role": "user", "content": judge_message(question_used, response, checklist_text)}]


def parse_score(text: str | None) -> float | None:
    """The official `parse_single_score(...)["value"]`, with every official failure mapped to None."""
    if not isinstance(text, str):
        return None  # the official `findall(None)` raises and its caller records None
    matches = score_re().findall(text)
    if len(matches) != 1:
        return None  # 0 tags: None; >1 tags: ValueError, caught by score.py -> None
    numerator, denominator = matches[0]
    try:
        if denominator:
            if float(denominator) == 0:
                return None  # official ZeroDivisionError -> None
            value = Fraction(numerator).limit_denominator(MAX_DENOMINATOR) / Fraction(denominator).limit_denominator(MAX_DENOMINATOR)
        else:
            value = Fraction(numerator).limit_denominator(MAX_DENOMINATOR)
    except (ZeroDivisionError, ValueError):
        return None  # e.g. a denominator that reduces to 0 under limit_denominator
    return float(value)
