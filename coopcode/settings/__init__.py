"""Settings declared once: the `option` machinery (`options`) and the groups several commands
share (`common`: the model, the adapters, the sandbox, --json, --events). Each job's own
settings live beside it (`collaboration.solve_config`, `evaluation.bench_config`,
`evaluation.command_configs`, `train.config`, `paper.config`, the engines' config)."""
