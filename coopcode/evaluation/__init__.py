"""Measuring a team honestly: `bench` (pass@k and acc@k over a problem set, resumable, with
its settings in `bench_config`), `evaluate` (score a samples file), the estimators (`at_k`),
intervals and paired tests (`stats`, `compare`), the report and figures (`report`, `plots`,
`results`) and the seed paper's Table 1 (`paper_table`)."""
