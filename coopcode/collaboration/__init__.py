"""How two agents write one program and what it earns: the scheduler that keeps many samples
in flight through the schemes' steps (`scheduler`), one judging path from a finished sample to
its verdict, cooperation and reward (`judging`, with the helper's code run alone:
`helper_alone`) and `solve`, one problem end to end (its settings in `solve_config`). What the
agents wrote is judged a floor below (`coopcode.code_analysis`) and kept as records
(`coopcode.records`); the schemes and the rewards are
plug-in packages of their own (`coopcode.schemes`, `coopcode.rewards`)."""
