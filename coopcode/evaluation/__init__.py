"""Measuring a team honestly: `bench` (pass@k and acc@k over a problem set, resumable, with
its settings in `bench_config`), `evaluate` (score a samples file), the estimators (`at_k`),
intervals and paired tests (`stats`, `compare`), the report and figures (`report`, `plots`,
`results`); the settings of evaluate and compare in `command_configs`. The seed paper's
Table 1 is `coopcode.paper`."""
