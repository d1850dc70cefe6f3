"""What the agents' code says, read from its syntax tree (never run): each agent's code and the
program they make (`program`), how main used the helper (`usage`), the cooperation patterns
(`patterns`), whether main did work of its own (`own_work`: its definition; `own_work_ways`:
one check per way; `marked_main`: main's code with the helper's answers marked; `not_work`:
what only looks like work), whether each agent's part is well formed (`parts`), whether main
copied the helper (`copies`) and the one reading of a pair that every view uses
(`cooperation`).

It fills in the records of `coopcode.records` and imports nothing else from the package, so
the schemes (which write attempts) and the rewards (which score them) both stand above it."""
