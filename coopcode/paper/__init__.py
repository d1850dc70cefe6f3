"""The seed paper's Table 1 re-made with this tool (`coopcode paper-table`): its rows trained
and benched (`table`), its settings (`config`). Above both training and the bench, which it
drives."""
