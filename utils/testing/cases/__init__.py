"""The benchmarks' specified reply cases, one table per benchmark, each checked two ways.

Every row is a model (or judge) reply with the verdict the official scorer gives it, written by hand from
`benchmarks_spec.md` (parsers, extraction branches, fences, indentation, whitespace, `<think>` blocks,
empty and null replies, unicode). The direct tests (`tests/<benchmark>/`) feed each reply to the task's hooks;
`tests/conformance/` replays every row as the reply of the stand-in server through the real `lmms-eval`
CLI and checks that the verdict in the samples file (and in the judgement / execution records) equals the
direct verdict and the table. A row added here is checked both ways.

Each module writes the rows as a dataset in the benchmark's real format (`write(root) -> FixtureSet`, one
record per row, each with a unique tag in its prompt) and scripts the stand-in server (`script(server)`).
"""
