"""Run by tests/train/test_distributed.py, alone or under torchrun: a short run of the tiny model
with a reward computed from the text (it varies across samples, so the adapters do move)."""

from __future__ import annotations

import sys
from pathlib import Path


def main() -> None:
    from coopcode.training import TrainConfig, output_scorer, train

    model, out = sys.argv[1:3]
    # Every step saved and kept: the test compares the adapters after each step.
    config = TrainConfig(model=model, steps=3, problems_per_step=4, group_size=2, max_new_tokens=8,
                         limit=4, deterministic=True, save_every=1, keep_checkpoints=3,
                         warmup_steps=0, learning_rate=1e-3)
    scorer = output_scorer(lambda _p, action, _n: float(len(action.program) % 7))
    train(config, Path(out), scorer=scorer)
    _leave_and_count()


def _leave_and_count() -> None:
    """Leave the process group as the run's exit does, then say how many DDP wrappers are
    still in memory: none may outlive the group into interpreter teardown."""
    import gc

    from torch.nn.parallel import DistributedDataParallel

    from coopcode.training.distributed import leave_group

    leave_group()
    print("ddp-alive", sum(isinstance(o, DistributedDataParallel) for o in gc.get_objects()))


if __name__ == "__main__":
    main()
