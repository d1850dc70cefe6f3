"""Problem sets made and shown: the `compose` set's build (`compose_build`, which runs the
sandbox) and its page (`compose_doc`), and the `coopcode problems` verbs (`cli`, `catalog`).

Above `coopcode.problems`, which holds the problem types, the loaders and the data they read,
and imports nothing from here."""
