"""The policy-gradient update on the tiny model: its sign, its scale, what it skips, KL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from coopcode.problems import load_problems
from coopcode.training.config import TrainConfig
from coopcode.training.logprobs import completion_logprobs
from coopcode.training.magrpo import MAGRPOTrainer
from coopcode.training.rollout import output_scorer
from coopcode.training.tree import Sample


def _trainer(make_engine: Any, model_dir: Path, **kw: Any) -> Any:
    settings = {"group_size": 2, "max_new_tokens": 4, "learning_rate": 1e-2, "warmup_steps": 0,
                "lora_rank": 4, "max_grad_norm": 0.0, **kw}
    config = TrainConfig(**settings)
    torch.manual_seed(0)  # LoRA A is initialised from torch's global generator
    return MAGRPOTrainer(make_engine(model_dir), config, load_problems("humaneval:train")[:2],
                         scorer=output_scorer(lambda p, a, n: 0.0))


def _samples(trainer: Any, advantages: list[float]) -> list[Sample]:
    engine = trainer.engine
    prompt = engine.encode(engine.render_chat([{"role": "user", "content": "Write aux."}]) + "```python\n")
    comps = [[785, 12, 99, 4], [1001, 7, 7], [5, 6, 7, 8, 9]][:len(advantages)]
    return [Sample("main", 0, prompt, c, advantage=a) for c, a in zip(comps, advantages)]


def _logp(trainer: Any, samples: list[Sample]) -> list[float]:
    trainer.policy.select("main")
    with torch.no_grad():
        lp = completion_logprobs(trainer.engine.base, [s.prompt_ids for s in samples],
                                 [s.completion_ids for s in samples],
                                 temperature=trainer.config.temperature)
    return lp.reduce("sum").tolist()


def _grads(trainer: Any) -> list[Any]:
    return [None if p.grad is None else p.grad.clone() for p in trainer.params["main"]]


def test_one_update_raises_positive_and_lowers_negative_advantage_completions(
        make_engine: Any, tiny_model_dir: Path) -> None:
    trainer = _trainer(make_engine, tiny_model_dir)
    samples = _samples(trainer, [1.0, -1.0])
    helper_before = [p.detach().clone() for p in trainer.params["helper"]]
    before = _logp(trainer, samples)
    trainer.accumulate("main", [samples])
    trainer.apply_gradients("main")
    after = _logp(trainer, samples)
    assert after[0] > before[0] + 1e-3
    assert after[1] < before[1] - 1e-3
    # The main agent's update leaves the helper's adapter alone.
    assert all(torch.equal(a, b) for a, b in zip(helper_before, trainer.params["helper"]))


def test_gradient_is_linear_in_the_advantage_and_zero_advantages_cost_nothing(
        make_engine: Any, tiny_model_dir: Path) -> None:
    trainer = _trainer(make_engine, tiny_model_dir)
    trainer.accumulate("main", [_samples(trainer, [1.0, -1.0])])
    one = _grads(trainer)
    trainer.optimizers["main"].zero_grad(set_to_none=True)
    trainer.accumulate("main", [_samples(trainer, [2.0, -2.0])])
    two = _grads(trainer)
    trainer.optimizers["main"].zero_grad(set_to_none=True)
    assert any(g is not None and g.abs().sum() > 0 for g in one)
    for a, b in zip(one, two):
        if a is not None:
            torch.testing.assert_close(b, 2 * a, rtol=1e-4, atol=1e-7)
    # All advantages zero (every joint action scored the same): no forward, no gradient.
    stats = trainer.accumulate("main", [_samples(trainer, [0.0, 0.0])])
    assert stats["main/trained_samples"] == 0.0
    assert all(g is None for g in _grads(trainer))


def test_loss_is_averaged_over_all_the_agents_samples(make_engine: Any, tiny_model_dir: Path) -> None:
    """Skipping zero-advantage samples must not change the gradient: it is normalised by
    every sample of the agent, trained or not."""
    trainer = _trainer(make_engine, tiny_model_dir)
    alone = _samples(trainer, [1.0])
    trainer.accumulate("main", [alone])
    g1 = _grads(trainer)
    trainer.optimizers["main"].zero_grad(set_to_none=True)
    padded = _samples(trainer, [1.0, 0.0, 0.0])
    trainer.accumulate("main", [padded])
    g3 = _grads(trainer)
    for a, b in zip(g1, g3):
        if a is not None:
            torch.testing.assert_close(b, a / 3, rtol=1e-3, atol=1e-6)


def test_mean_reduction_divides_by_the_completion_length(make_engine: Any, tiny_model_dir: Path) -> None:
    summed = _trainer(make_engine, tiny_model_dir)
    meaned = _trainer(make_engine, tiny_model_dir, logprob_reduction="mean")
    for t in (summed, meaned):
        t.accumulate("main", [_samples(t, [1.0])])  # one completion of 4 tokens
    for a, b in zip(_grads(summed), _grads(meaned)):
        if a is not None:
            torch.testing.assert_close(b, a / 4, rtol=1e-3, atol=1e-6)


def test_token_level_loss_divides_by_the_groups_tokens(make_engine: Any, tiny_model_dir: Path) -> None:
    """Dr. GRPO / DAPO: the summed log-probs over every completion's tokens, divided by all
    the agent's tokens (here 4 + 3), not by the number of completions (2)."""
    per_sample = _trainer(make_engine, tiny_model_dir)
    per_token = _trainer(make_engine, tiny_model_dir, token_level_loss=True)
    for t in (per_sample, per_token):
        t.accumulate("main", [_samples(t, [1.0, -1.0])])
    for a, b in zip(_grads(per_sample), _grads(per_token)):
        if a is not None:
            torch.testing.assert_close(b, a * 2 / 7, rtol=1e-2, atol=2e-6)


def test_groups_whose_rewards_do_not_vary_can_be_dropped(make_engine: Any, tiny_model_dir: Path) -> None:
    """By default a constant group still counts in the normaliser (the paper's); dropped, it
    does not, and the update is that of the varying group alone."""
    kept = _trainer(make_engine, tiny_model_dir)
    dropped = _trainer(make_engine, tiny_model_dir, drop_constant_groups=True)
    alone = _trainer(make_engine, tiny_model_dir)
    for t in (kept, dropped):
        stats = t.accumulate("main", [_samples(t, [1.0, -1.0]), _samples(t, [0.0, 0.0])])
    assert stats["main/dropped_groups"] == 1.0
    alone.accumulate("main", [_samples(alone, [1.0, -1.0])])
    for k, d, a in zip(_grads(kept), _grads(dropped), _grads(alone)):
        if a is not None:
            torch.testing.assert_close(d, a, rtol=1e-4, atol=1e-7)
            torch.testing.assert_close(k, a / 2, rtol=1e-3, atol=1e-7)


def test_kl_to_the_base_is_zero_for_a_fresh_adapter_and_grows_after_updates(
        make_engine: Any, tiny_model_dir: Path) -> None:
    trainer = _trainer(make_engine, tiny_model_dir, kl_coef=0.1, learning_rate=5e-2)
    samples = _samples(trainer, [1.0, -1.0])
    stats = trainer.accumulate("main", [samples])
    assert stats["main/kl"] == pytest.approx(0.0, abs=1e-6)  # LoRA B starts at 0: pi == pi_ref
    trainer.apply_gradients("main")
    for _ in range(2):
        trainer.accumulate("main", [samples])
        trainer.apply_gradients("main")
    assert trainer.accumulate("main", [samples])["main/kl"] > 1e-4


def _moved_adapter(make_engine: Any, model_dir: Path, folder: Path) -> Path:
    """A main adapter a few updates away from a fresh one, saved as a PEFT folder: a warm
    start that differs from the base."""
    trainer = _trainer(make_engine, model_dir, learning_rate=5e-2)
    samples = _samples(trainer, [1.0, -1.0])
    for _ in range(3):
        trainer.accumulate("main", [samples])
        trainer.apply_gradients("main")
    return trainer.policy.save("main", folder / "main")


@pytest.mark.parametrize("reference", ["start", "base"])
def test_kl_is_measured_against_the_adapters_the_run_started_from(
        make_engine: Any, tiny_model_dir: Path, tmp_path: Path, reference: str) -> None:
    """From a warm start, the KL to the start is 0 before any update (the penalty anchors the
    agent where it began), while the KL to the bare base is not: the warm start is already
    away from it. `--kl-ref base` keeps the old measure."""
    start = _moved_adapter(make_engine, tiny_model_dir, tmp_path)
    trainer = _trainer(make_engine, tiny_model_dir, kl_coef=0.1, main_init=str(start),
                       kl_reference=reference)
    assert trainer.references["main"] == ("ref-main" if reference == "start" else None)
    kl = trainer.accumulate("main", [_samples(trainer, [1.0, -1.0])])["main/kl"]
    if reference == "start":
        assert kl == pytest.approx(0.0, abs=1e-6)
        assert not any(p.requires_grad for p in trainer.policy.parameters("ref-main"))
        assert all(p.grad is None for p in trainer.policy.parameters("ref-main"))
    else:
        assert kl > 1e-3
    # the reference stays where the run began while the agent moves away from it
    trainer.apply_gradients("main")
    before = [p.detach().clone() for p in trainer.policy.parameters("ref-main")] \
        if reference == "start" else []
    for _ in range(2):
        trainer.accumulate("main", [_samples(trainer, [1.0, -1.0])])
        trainer.apply_gradients("main")
    for b, p in zip(before, trainer.policy.parameters("ref-main")):
        torch.testing.assert_close(b, p.detach())
    assert trainer.accumulate("main", [_samples(trainer, [1.0, -1.0])])["main/kl"] > 1e-4


def test_a_kl_cap_bounds_each_tokens_estimate_and_its_gradient(
        make_engine: Any, tiny_model_dir: Path, tmp_path: Path) -> None:
    """`kl_cap`: from a warm start measured against the bare base (every token's estimate
    above zero), the capped KL reads at most the cap a token, and with every token past it
    the KL adds no gradient: the update is the one without the KL term."""
    from coopcode.training.magrpo import token_kl

    # The estimate itself: a token far below its reference weighs exp(r), capped at C.
    ref, cur, mask = torch.tensor([[0.0, 0.0, 0.0]]), torch.tensor([[-9.0, -0.1, 0.0]]), \
        torch.tensor([[1.0, 1.0, 0.0]])
    assert token_kl(ref, cur, mask)[0, 0] > 8000
    capped = token_kl(ref, cur, mask, cap=10.0)
    assert capped[0, 0] == 10.0 and capped[0, 1] == pytest.approx(0.00517, abs=1e-5)
    assert capped[0, 2] == 0.0

    start = _moved_adapter(make_engine, tiny_model_dir, tmp_path)
    runs = {}
    for name, kw in {"uncapped": {"kl_coef": 0.1}, "capped": {"kl_coef": 0.1, "kl_cap": 1e-12},
                     "no KL": {"log_kl": True}}.items():
        trainer = _trainer(make_engine, tiny_model_dir, main_init=str(start),
                           kl_reference="base", **kw)
        stats = trainer.accumulate("main", [_samples(trainer, [1.0, -1.0])])
        runs[name] = (stats["main/kl"], _grads(trainer))
    assert runs["uncapped"][0] > 1e-3 and runs["capped"][0] <= 1e-12
    for c, n in zip(runs["capped"][1], runs["no KL"][1]):
        if n is not None:
            torch.testing.assert_close(c, n)
    assert any(n is not None and not torch.allclose(u, n)
               for u, n in zip(runs["uncapped"][1], runs["no KL"][1]))


def test_each_agent_has_its_own_learning_rate(make_engine: Any, tiny_model_dir: Path) -> None:
    trainer = _trainer(make_engine, tiny_model_dir, learning_rate=1e-3, main_lr=3e-5)
    assert trainer.optimizers["helper"].param_groups[0]["lr"] == pytest.approx(1e-3)
    assert trainer.optimizers["main"].param_groups[0]["lr"] == pytest.approx(3e-5)
    both = _trainer(make_engine, tiny_model_dir, learning_rate=1e-3, helper_lr=2e-4)
    assert both.optimizers["helper"].param_groups[0]["lr"] == pytest.approx(2e-4)
    assert both.optimizers["main"].param_groups[0]["lr"] == pytest.approx(1e-3)
    # the step a rate takes is its own: main's weights move 1e-3/3e-5 times less per update
    # with Adam's first step (every weight moves by about lr)
    samples = _samples(trainer, [1.0, -1.0])
    before = [p.detach().clone() for p in trainer.params["main"]]
    trainer.accumulate("main", [samples])
    trainer.apply_gradients("main")
    moved = max(float((p.detach() - b).abs().max()) for p, b in zip(trainer.params["main"], before))
    assert moved == pytest.approx(3e-5, rel=0.05)
