"""The records a run keeps, typed: one sample (`attempts`: `Attempt`, `AgentOutput`,
`Program`), each agent judged on its own (`checks`), how a pair cooperated (`cooperation`)
and a reward's score (`reward_terms`).

The lowest floor of the package: every other floor describes a sample with these words, and
this one imports nothing from `coopcode` (each record converts itself to and from the JSON of
`samples.jsonl` at the edge)."""
