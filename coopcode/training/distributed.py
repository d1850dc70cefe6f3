"""Data-parallel training: `torchrun --nproc_per_node N -m coopcode train ...`.

torchrun (or `accelerate launch`) starts N copies and sets RANK / WORLD_SIZE / MASTER_ADDR;
each rank loads the model, takes its share of every step's problems (`shard`), samples and
scores them, and accumulates the gradients of its share. The agents' LoRA weights are
wrapped in torch's DistributedDataParallel (one DDP per agent, `AgentLoss`), which all-reduces
their gradients at the step's last backward; every rank then takes the same optimizer step.
The loss of a rank is normalised by the agents' sample count over *all* ranks, so the
reduced gradient is the one a single process would compute for the whole batch: a 2-rank
run and a 1-rank run with the same global batch end with the same adapters (to
floating-point tolerance). Rank 0 alone writes checkpoints, metrics and events; the step's
samples of every rank are gathered to it for `samples.jsonl`. gloo on a
CPU, NCCL on GPUs; no home-made gradient exchange.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, TypeVar

import torch

T = TypeVar("T")


class Ranks:
    """This process's place among the training processes (one process: rank 0 of 1)."""

    def __init__(self, rank: int = 0, world: int = 1) -> None:
        self.rank, self.world = rank, world

    @property
    def main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world > 1

    def shard(self, items: Sequence[T]) -> list[T]:
        """This rank's share of a step's items (round-robin, so shares differ by at most one)."""
        return list(items[self.rank::self.world])

    def total(self, count: int) -> int:
        """`count` summed over the ranks."""
        if not self.distributed:
            return count
        t = torch.tensor([count], dtype=torch.long)
        torch.distributed.all_reduce(t)
        return int(t.item())

    def average(self, metrics: dict[str, float]) -> dict[str, float]:
        """Each metric averaged over the ranks that report it (rank 0 logs the result)."""
        if not self.distributed:
            return metrics
        gathered: list[dict[str, float] | None] = [None] * self.world
        torch.distributed.all_gather_object(gathered, metrics)
        keys = {k for m in gathered if m for k in m}
        out = {}
        for k in keys:
            values = [m[k] for m in gathered if m and k in m]
            out[k] = sum(values) / len(values)
        return out

    def gather(self, item: T) -> list[T]:
        """`item` of every rank, in rank order, on every rank (one process: `[item]`)."""
        if not self.distributed:
            return [item]
        gathered: list[Any] = [None] * self.world
        torch.distributed.all_gather_object(gathered, item)
        return gathered

    def in_order(self, shares: list[list[T]]) -> list[T]:
        """The items of a step in their order, from the ranks' `shard`s of it (round-robin)."""
        return [share[i] for i in range(max(map(len, shares), default=0))
                for share in shares if i < len(share)]

    def barrier(self) -> None:
        if self.distributed:
            torch.distributed.barrier()


def init_ranks() -> Ranks:
    """Join the process group torchrun set up (WORLD_SIZE > 1), or run alone."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return Ranks()
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        atexit.register(leave_group)
    return Ranks(dist.get_rank(), dist.get_world_size())


def leave_group() -> None:
    """Leave the process group while the interpreter is whole (run at exit).

    Each agent's DDP wrapper sits in a reference cycle (its `AgentLoss` holds the trainer's
    loss method, the trainer holds the wrapper), so only the cycle collector frees it, and
    with it its reference to gloo's group. Left to interpreter teardown, the group is freed
    there, where gloo's pending work can no longer take the GIL, and the rank can abort
    ("terminate called without an active exception") after a run that finished. Collect
    first, then destroy the group."""
    import gc

    import torch.distributed as dist

    if dist.is_initialized():
        gc.collect()
        dist.destroy_process_group()


class AgentLoss(torch.nn.Module):
    """One agent's loss over a micro-batch, as a module whose parameters are the agent's LoRA
    weights: wrapped in DDP, its backward all-reduces exactly those gradients."""

    def __init__(self, params: Sequence[torch.nn.Parameter],
                 compute: Callable[[Any], tuple[torch.Tensor, Any]]) -> None:
        super().__init__()
        self.weights = torch.nn.ParameterList(params)
        self.compute = compute

    def forward(self, chunk: Any) -> tuple[torch.Tensor, Any]:
        if chunk is None:  # this rank has nothing to learn from: join the reduction with 0
            zero = sum((p.sum() * 0.0 for p in self.weights), torch.zeros(()))
            return zero, None
        return self.compute(chunk)


def agent_loss(params: Sequence[torch.nn.Parameter], compute: Callable[[Any], tuple[torch.Tensor, Any]],
               ranks: Ranks) -> torch.nn.Module:
    """`AgentLoss`, in DDP when there are several ranks."""
    module = AgentLoss(params, compute)
    if not ranks.distributed:
        return module
    from torch.nn.parallel import DistributedDataParallel

    # Every LoRA weight gets a gradient in every backward (no unused parameters), and the
    # ranks start from rank 0's weights (DDP broadcasts them).
    return DistributedDataParallel(module)


def no_sync(module: torch.nn.Module, last: bool) -> AbstractContextManager[None]:
    """Gradients are reduced once, at the last backward of the step; before it, no_sync."""
    from torch.nn.parallel import DistributedDataParallel

    if last or not isinstance(module, DistributedDataParallel):
        return nullcontext()
    return module.no_sync()
