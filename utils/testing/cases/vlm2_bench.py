"""VLM2-Bench reply cases (spec 1.5, quirks V4-V7, V10-V12) and their official verdicts.

The official image scripts save `output.strip()` and the scorers read that text as it is: `<think>`
blocks are part of the answer (the task pins `reasoning_tags: none`). Verdicts per scorer:
- T/F (`oc_cpr`; the same parser serves GC and PC-Cpr): the parsed letter, or None;
- GC exact match (`gc_mat`): the parsed letter and whether the stripped answer equals the gt exactly;
- counting (`oc_cnt`): the parsed number and the item's normalized score (None = excluded), with L read
  from `image_seq_len`, `image_seq` or the default 2;
- grouping (`oc_grp`): correct or not;
- PC-VID (`pc_vid`): the description the judge receives and the judge's parsed score (None = dropped).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmms_tasks.utils.testing.fixtures import FixtureSet
from lmms_tasks.utils.testing.fixtures import vlm2_bench as release

# score of an off-by-one answer with gt 1 and L = 4 (spec 1.6): 100 * (1 - (4/4) * (1/3) ** 0.1)
OFF_BY_ONE_L4 = 100 * (1 - (1 / 3) ** 0.1)
# gt 2, answer 3, L = 4: max_error 2, relative error 1/2
OFF_BY_ONE_MID_L4 = 100 * (1 - 0.5**0.1)


@dataclass(frozen=True)
class Case:
    """One model reply to one record of `subtask`, and the official verdict of it."""

    name: str
    subtask: str
    reply: str | None
    gt: Any
    verdict: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)  # record fields (image_seq_len, image_seq)
    images: int = 2

    @property
    def q_id(self) -> str:
        return f"c_{self.name}"

    @property
    def tag(self) -> str:
        return release.question_tag(self.subtask, self.q_id, self.gt)


def _tf(name: str, reply: str | None, parsed: str | None) -> Case:
    return Case(name, "oc_cpr", reply, "T", {"parsed": parsed})


TF_CASES = [
    _tf("bare_T", "T", "T"),
    _tf("bare_F", "F", "F"),
    _tf("lower_t", "t", "T"),
    _tf("word_true", "true", "T"),
    _tf("False_dot", "False.", "F"),
    _tf("sentence", "The answer is True", "T"),
    _tf("upper_TRUE", "TRUE", "T"),
    # V6: agreeing repeats are still "multiple answers"
    _tf("agreeing_repeats", "True. The statement is true.", None),
    _tf("T_comma_T", "T, T", None),
    _tf("T_or_F", "T or F?", None),
    # V6: contractions yield a standalone t at a word boundary
    _tf("cant", "I can't tell", "T"),
    _tf("isnt_plus_false", "It isn't the same, false", None),
    _tf("arent", "They aren't the same", "T"),
    _tf("empty", "", None),
    _tf("null_content", None, None),  # an API reply with "content": null reaches the scorer as ""
    _tf("no_token", "Yes, they are the same object.", None),
    _tf("prefix_Tr", "Tr", None),
    _tf("fTrue", "fTrue", None),
    # whitespace around the answer: stripped at inference, as officially
    _tf("surrounding_whitespace", "  \n T \t\n", "T"),
    # <think> blocks are part of the answer officially: tokens inside them count
    _tf("think_with_token", "<think>Is it true? They look alike.</think>F", None),
    _tf("think_without_token", "<think>Compare the handles and colours.</think>\nF", "F"),
    _tf("unclosed_think", "<think>looking at both images... F", "F"),
    _tf("think_token_inside_only", "<think>I think it is true</think>", "T"),
    # unicode around the answer; a full-width letter is not the ASCII letter
    _tf("korean_then_T", "정답은 T 입니다", "T"),
    _tf("emoji_true", "✅ True", "T"),
    _tf("fullwidth_T", "Ｔ", None),
]


def _gc(name: str, reply: str | None, gt: str, parsed: str | None, exact: bool) -> Case:
    return Case(name, "gc_mat", reply, gt, {"parsed": parsed, "exact": exact})


# GC: the official scorer compares the stripped answer with "T"/"F" exactly; the parsed mode (default) first
# applies the T/F parser (V1)
GC_CASES = [
    _gc("exact_T", "T", "T", "T", True),
    _gc("exact_F_with_whitespace", "\n F  ", "F", "F", True),
    _gc("word_False", "False", "F", "F", False),
    _gc("lower_t", "t", "T", "T", False),
    _gc("T_dot", "T.", "T", "T", False),
    _gc("think_then_T", "<think>the vase moved</think>T", "T", "T", False),
    _gc("empty", "", "T", None, False),
]


def _cnt(name: str, reply: str | None, gt: int, parsed: int | None, score: float | None, **extra: Any) -> Case:
    images = int(extra.get("image_seq_len") or len(extra.get("image_seq") or []) or 2)
    return Case(name, "oc_cnt", reply, gt, {"parsed": parsed, "score": score}, extra, images=max(images, 2))


COUNT_CASES = [
    # spec 1.5 (c) examples, with gt 3 and L = 4 (off by one from 3: the mid-range penalty)
    _cnt("digit", "3", 3, 3, 100.0, image_seq_len=4),
    _cnt("word", "three", 3, 3, 100.0, image_seq_len=4),
    _cnt("sentence", "There are 3 people.", 3, 3, 100.0, image_seq_len=4),
    _cnt("digit_and_word", "2 (two)", 3, None, None, image_seq_len=4),
    _cnt("two_digits", "Image 1 and image 3 show the same person, so 2", 3, None, None, image_seq_len=4),
    _cnt("words_joined", "two people, one on the left", 3, 3, 100.0, image_seq_len=4),  # V4: "two one" -> 3
    _cnt("the_one", "the one in the first image", 1, 1, 100.0, image_seq_len=4),
    _cnt("zero_word", "zero", 1, None, None, image_seq_len=4),  # V5
    _cnt("zero_digit", "0", 1, 0, None, image_seq_len=4),  # V5: parses, out of range -> excluded
    _cnt("twenty_one", "twenty one", 3, 21, None, image_seq_len=4),
    _cnt("hyphenated", "Twenty-One objects", 3, 21, None, image_seq_len=4),
    _cnt("hundred", "one hundred", 3, 100, None, image_seq_len=4),
    _cnt("no_number", "no number here", 3, None, None, image_seq_len=4),
    _cnt("digit_and_same_word", "4 and four", 3, None, None, image_seq_len=4),
    _cnt("thousand", "thousand", 3, None, None, image_seq_len=4),
    _cnt("off_by_one_mid", "2", 3, 2, OFF_BY_ONE_MID_L4, image_seq_len=4),
    # L: image_seq_len, else len(image_seq), else 2; partial credit only when L >= 4 (V3)
    _cnt("L4_from_image_seq", "2", 1, 2, OFF_BY_ONE_L4, image_seq=["a", "b", "c", "d"]),
    _cnt("L4_from_image_seq_len", "2", 1, 2, OFF_BY_ONE_L4, image_seq_len=4),
    _cnt("L3_from_image_seq", "2", 1, 2, 0.0, image_seq=["a", "b", "c"]),
    _cnt("L3_upper_bound", "3", 1, 3, 0.0, image_seq=["a", "b", "c"]),
    _cnt("L3_out_of_range", "4", 1, 4, None, image_seq=["a", "b", "c"]),
    _cnt("L1_from_image_seq", "2", 1, 2, None, image_seq=["a"]),  # 2 > L = 1: out of range
    _cnt("L1_right", "1", 1, 1, 100.0, image_seq=["a"]),
    _cnt("L_default_2", "2", 1, 2, 0.0),
    _cnt("L_default_out_of_range", "3", 1, 3, None),
    # whitespace, <think> (part of the answer officially), unicode, empty
    _cnt("whitespace", "\n\t 3 \n", 3, 3, 100.0, image_seq_len=4),
    _cnt("think_with_number", "<think>maybe 2</think>3", 3, None, None, image_seq_len=4),
    _cnt("think_with_word", "<think>one, two, three</think>", 3, 6, None, image_seq_len=4),
    _cnt("korean_digit", "사진 속 인형은 3개입니다", 3, 3, 100.0, image_seq_len=4),
    _cnt("fullwidth_digit", "３", 3, 3, 100.0, image_seq_len=4),  # \d matches Unicode digits; int() reads them
    _cnt("empty", "", 3, None, None, image_seq_len=4),
]


def _grp(name: str, reply: str | None, gt: str, correct: bool) -> Case:
    return Case(name, "oc_grp", reply, gt, {"correct": correct}, images=4)


GRP_CASES = [
    _grp("option_only", "(C)", "(C) 1, 3 and 4", True),
    _grp("option_and_text", "(C) 1, 3 and 4", "(C) 1, 3 and 4", True),
    _grp("option_other_text", "(C) something else entirely", "(C) 1, 3 and 4", True),
    _grp("letter_only", "C", "(C) 1, 3 and 4", False),
    _grp("letter_paren", "C)", "(C) 1, 3 and 4", False),
    _grp("answer_prefix", "Answer: (C)", "(C) 1, 3 and 4", False),  # V7
    _grp("sentence_prefix", "The answer is (C)", "(C) 1, 3 and 4", False),
    _grp("lower_case", "(c)", "(C) 1, 3 and 4", False),
    _grp("two_options", "(A) or (C)", "(C) 1, 3 and 4", False),
    _grp("option_then_other", "(A) 1 and 2, not (B)", "(A) 1 and 2", False),
    _grp("leading_space", " (A)", "(A) 1 and 2", True),
    _grp("none_option", "(B) None", "(B) None", True),
    _grp("no_paren_anywhere", "None", "None", True),
    _grp("surrounding_whitespace", "\n  (B) None \n", "(B) None", True),
    _grp("think_first", "<think>images 1 and 2 match</think>(A)", "(A) 1 and 2", False),
    _grp("korean_after_option", "(D) 1번과 4번", "(D) 1 and 4", True),
    _grp("fullwidth_paren", "（A）", "(A) 1 and 2", False),
    _grp("empty", "", "(A) 1 and 2", False),
]


@dataclass(frozen=True)
class VidCase:
    """A PC-VID model reply, the judge's reply to it, and the official verdict (V10-V12)."""

    name: str
    vid: str  # "ABA" in the id selects the ABA prompt
    reply: str | None
    judge_reply: str | None
    description: str  # what the judge's prompt carries as {description}
    score: int | None  # the judge score parsed (None: dropped from the average)

    @property
    def tag(self) -> str:
        return f"[pc_vid:{self.vid}]"


VID_CASES = [
    VidCase("ab_one", "UNI_AB_c01", "vid-c01 two people", "Score: 1", "vid-c01 two people", 1),
    VidCase("aba_two", "UNI_ABA_c02", "vid-c02 A then B then A", "Score:2", "vid-c02 A then B then A", 2),
    VidCase("first_match_wins", "UNI_ABA_c03", "vid-c03", "Reasoning... Score:   0\nScore: 2", "vid-c03", 0),
    VidCase("case_sensitive", "UNI_AB_c04", "vid-c04", "score: 1", "vid-c04", None),
    VidCase("word_score", "UNI_AB_c05", "vid-c05", "Score: two", "vid-c05", None),
    VidCase("empty_judge", "UNI_AB_c06", "vid-c06", "", "vid-c06", None),
    VidCase("null_judge", "UNI_AB_c07", "vid-c07", None, "vid-c07", None),
    VidCase("not_clipped", "UNI_AB_c08", "vid-c08", "Score: 7", "vid-c08", 7),
    # the model's answer reaches the judge stripped, <think> block and unicode included
    VidCase("think_kept", "UNI_ABA_c09", "<think>vid-c09 plan</think> A, B, then A again", "Score: 2", "<think>vid-c09 plan</think> A, B, then A again", 2),
    VidCase("whitespace_stripped", "UNI_AB_c10", "\n  vid-c10 two women  \n", "Score: 1", "vid-c10 two women", 1),
    VidCase("unicode", "UNI_AB_c11", "vid-c11 두 사람이 차례로 등장한다 ✓", "Score: 1", "vid-c11 두 사람이 차례로 등장한다 ✓", 1),
]

IMAGE_CASES: list[Case] = TF_CASES + GC_CASES + COUNT_CASES + GRP_CASES


def _spec() -> dict[str, list[tuple[Any, Any, int, dict[str, Any]]]]:
    spec: dict[str, list[tuple[Any, Any, int, dict[str, Any]]]] = {}
    for case in IMAGE_CASES:
        spec.setdefault(case.subtask, []).append((case.q_id, case.gt, case.images, dict(case.extra)))
    return spec


def write(root: Path) -> FixtureSet:
    """One record per case in the official release layout (`VLM2_BENCH_DATA`), one short video per VID case."""
    videos = {case.vid: [700 + 2 * i, 701 + 2 * i] + ([700 + 2 * i] if "ABA" in case.vid else []) for i, case in enumerate(VID_CASES)}
    return release.write(root, spec=_spec(), videos=videos)


def subtasks() -> list[str]:
    return sorted({case.subtask for case in IMAGE_CASES} | {"pc_vid"})


def script(server: Any) -> None:
    """Every case's reply for its record, and the judge's reply for every VID description."""
    from lmms_tasks.utils.testing.e2e import STAND_IN_JUDGE, STAND_IN_MODEL

    for case in IMAGE_CASES:
        server.script(lambda r, t=case.tag: r.model == STAND_IN_MODEL and t in r.text, case.reply)
    for vid in VID_CASES:
        server.script(lambda r, t=vid.tag: r.model == STAND_IN_MODEL and t in r.text, vid.reply)
        marker = vid.description.split()[0] if vid.description.startswith("vid-") else vid.description.split("</think>")[0]
        server.script(lambda r, m=marker: r.model == STAND_IN_JUDGE and m in r.text, vid.judge_reply)


def verdict(item: dict[str, Any]) -> dict[str, Any]:
    """The verdict fields of one `process_results` item (from the hook directly or from a samples file)."""
    from lmms_tasks.utils.vlm2_bench.metrics import count_item_score

    kind = str(item["kind"])  # the subtask's declared kind, which the hook stamps into its item
    if kind == "tf_cpr":
        return {"parsed": item["parsed"]}
    if kind == "tf_gc":
        return {"parsed": item["parsed"], "exact": str(item["response"]).strip() == item["gt"]}
    if kind == "cnt":
        return {"parsed": item["parsed"], "score": count_item_score(item["parsed"], int(item["gt"]), int(item["image_len"]))}
    if kind == "grp":
        return {"correct": item["correct"]}
    raise ValueError(f"no reply verdict for subtask {item['subtask']!r}")


def case_for(item: dict[str, Any]) -> Case:
    """The case a `process_results` item answers (matched by the record's q_id)."""
    (case,) = [c for c in IMAGE_CASES if c.q_id == item["q_id"] and c.subtask == item["subtask"]]
    return case
