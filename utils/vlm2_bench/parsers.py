"""Answer extraction exactly as the official VLM2-Bench scorers do it (spec section 1.5).

Each parser reproduces the official behaviour, quirks included: the T/F parser rejects agreeing repeats
and reads the "t" of "can't" as True; the counting parser builds one number out of *all* number words;
the grouping rule compares the raw prefix before the first ")".
"""

from __future__ import annotations

import re

_TF_PATTERN = re.compile(r"\b(t|f|true|false)\b", re.IGNORECASE)

_NUM_WORDS: dict[str, int] = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100,
    "thousand": 1000,
}  # fmt: skip
_NUM_WORD_PATTERN = re.compile(r"\b(" + "|".join(_NUM_WORDS) + r")\b", re.IGNORECASE)
_DIGITS = re.compile(r"\d+")
_OPTION = re.compile(r"\([A-Z]\)")
_JUDGE_SCORE = re.compile(r"Score:\s*(\d+)")


def parse_tf(answer: str) -> str | None:
    """'T'/'F' when the answer holds exactly one t/f/true/false token (any case), else None.

    Official `parse_tf_answer`: two or more tokens give None even when they agree ("True. It is true."),
    and contractions such as "can't" contribute a standalone "t".
    """
    matches = _TF_PATTERN.findall(answer or "")
    return matches[0][0].upper() if len(matches) == 1 else None


def words_to_num(phrase: str) -> int | None:
    """The official `words_to_num`: units/tens add, hundred/thousand multiply and flush; 0 -> None."""
    tokens = phrase.lower().replace("-", " ").replace("and", " ").split()
    total = current = 0
    for token in tokens:
        if token not in _NUM_WORDS:
            return None
        value = _NUM_WORDS[token]
        if value in (100, 1000):
            current = (current or 1) * value
            total += current
            current = 0
        else:
            current += value
    total += current
    return total if total != 0 else None


def extract_numbers(text: str) -> list[int]:
    """All digit runs, plus at most one number built from every number word in the text (in order)."""
    text = (text or "").lower()
    numbers = [int(digits) for digits in _DIGITS.findall(text)]
    words = _NUM_WORD_PATTERN.findall(text)
    if words:
        combined = words_to_num(" ".join(words))
        if combined is not None:
            numbers.append(combined)
    return numbers


def parse_count(answer: str) -> int | None:
    """The single number in the answer, or None when there are zero or several (official rule)."""
    numbers = extract_numbers((answer or "").strip())
    return numbers[0] if len(numbers) == 1 else None


def count_options(answer: str) -> int:
    """How many "(X)" option tokens the answer holds; more than one is a multi-choice answer."""
    return len(_OPTION.findall(answer or ""))


def grp_clean(answer: str) -> str:
    """The official `clean_answer`: everything before the first ")", stripped ("(C) 1 and 3" -> "(C")."""
    return answer.split(")")[0].strip()


def grp_correct(answer: str, gt: str) -> bool:
    """Official grouping rule: wrong if several options are named, else the cleaned prefixes must match."""
    if count_options(answer) > 1:
        return False
    return grp_clean(answer) == grp_clean(gt)


def parse_judge_score(text: str | None) -> int | None:
    """The first integer after "Score:" in a judge reply; None (the item is dropped) when absent."""
    if not text:
        return None
    match = _JUDGE_SCORE.search(text)
    return int(match.group(1)) if match else None
