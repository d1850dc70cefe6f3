"""Problem sets shown: the `coopcode problems` verbs (`cli`, `catalog`). The `compose` set is
built outside the package (scripts/compose_build.py); the package only reads it.

Above `coopcode.problems`, which holds the problem types, the loaders and the data they read,
and imports nothing from here."""
