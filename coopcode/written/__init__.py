"""What the agents wrote, and what it says: each agent's code and the program they make
(`code`), one sample's record (`attempts`), how main used the helper (`usage`), the
cooperation patterns (`cooperation`), whether main did work of its own (`own_work`: its
definition; `own_work_ways`: one check per way; `marked_main`: main's code with the helper's
answers marked; `not_work`: what only looks like work), whether each agent's part is well
formed (`parts`), the one analysis of a pair read everywhere (`analysis`) and a reward's
score (`reward_terms`).

The floor below the schemes (which write attempts) and the rewards (which score them), so
neither needs the other to describe a sample."""
