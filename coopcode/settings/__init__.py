"""Settings declared once: the `option` machinery (`options`), the groups several commands
share (`common`: the model, the adapters, the sandbox, --json, --events) and the settings of
the reading commands (`commands`: evaluate, compare, paper-table). Each job's own settings
live beside it (`evaluation.bench_config`, `collaboration.solve_config`, `train.config`,
`engines.options`)."""
