"""coopcode: run, evaluate and train cooperating code LLMs.

The public Python API, imported lazily (torch loads with the first engine, not here):

    from coopcode import load_engine, load_problems, open_sandbox, BenchConfig, run_bench
    engine = load_engine()                            # the embedded 0.5B model
    problems = load_problems("humaneval:test")
    with open_sandbox() as sandbox:
        summary = run_bench(BenchConfig(schemes=("single", "sequential"), n=5, ks=(1, 5)),
                            problems, engine, sandbox, Path("runs/py"))
"""

import os as _os
from importlib import import_module as _import_module
from typing import Any as _Any

# Torch's OpenMP threads spin while they wait for each other. On a machine where other work
# takes a core away (a training run beside a bench, CI neighbours), a spinning 2-thread
# matmul waits on a descheduled thread each step: measured here 5.9 s/step instead of 1.1.
# Passive waiting costs little when the machine is idle. Must be set before torch loads.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"

_LAZY = {
    # engines and the agents on them
    "Engine": "coopcode.engines", "GenerationRequest": "coopcode.engines",
    "SamplingParams": "coopcode.engines", "ScriptedEngine": "coopcode.engines",
    "load_engine": "coopcode.engines", "open_agents": "coopcode.engines.agents",
    "Agents": "coopcode.engines.agents", "attach_adapters": "coopcode.engines.agents",
    "resolve_adapter_path": "coopcode.engines.agents",
    # models
    "CATALOG": "coopcode.models.catalog", "DEFAULT_MODEL": "coopcode.models.catalog",
    "is_ready": "coopcode.models.embedded",
    # problems
    "Problem": "coopcode.problems", "load_problems": "coopcode.problems",
    "load_humaneval": "coopcode.problems", "load_problem_file": "coopcode.problems",
    "parse_problem_source": "coopcode.problems",
    # the sandbox
    "open_sandbox": "sandbox", "Job": "sandbox", "Verdict": "sandbox",
    "SandboxUnavailable": "sandbox",
    # schemes and the scheduler
    "SCHEMES": "coopcode.schemes", "Scheme": "coopcode.schemes", "get_scheme": "coopcode.schemes",
    "has_helper": "coopcode.schemes", "DEFAULT_SCHEME": "coopcode.schemes",
    "scheme_names": "coopcode.schemes", "trainable_scheme_names": "coopcode.schemes",
    "SampleState": "coopcode.schemes", "Steps": "coopcode.schemes", "adapter_of": "coopcode.schemes",
    "Scheduler": "coopcode.collaboration.scheduler",
    "SampleSpec": "coopcode.collaboration.scheduler",
    "sample_specs": "coopcode.collaboration.scheduler",
    "Attempt": "coopcode.records.attempts",
    # jobs
    "solve": "coopcode.collaboration.solve", "SolveConfig": "coopcode.collaboration.solve",
    "SolveResult": "coopcode.collaboration.solve", "judge": "coopcode.collaboration.solve",
    "run_bench": "coopcode.evaluation.bench", "BenchConfig": "coopcode.evaluation.bench",
    "BenchSummary": "coopcode.evaluation.bench",
    "pass_at_k": "coopcode.evaluation.at_k",
    "pass_at_k_by_problem": "coopcode.evaluation.at_k",
    "acc_at_k_by_problem": "coopcode.evaluation.at_k",
    # rewards
    "format_terms": "coopcode.rewards", "term_keys": "coopcode.rewards",
    "RewardBreakdown": "coopcode.rewards", "RewardInput": "coopcode.rewards",
    "Reward": "coopcode.rewards", "get_reward": "coopcode.rewards",
    "reward_names": "coopcode.rewards",
    # your own schemes, rewards and engines (one module; COOPCODE_PLUGINS for the command line)
    "register_scheme": "coopcode.schemes", "register_reward": "coopcode.rewards",
    "register_engine": "coopcode.engines", "EngineKind": "coopcode.engines",
    "EngineConfig": "coopcode.engines",
    "load_plugins": "coopcode.plugins",
    # evaluation: intervals, paired comparisons, cooperation patterns
    "classify_cooperation": "coopcode.code_analysis.patterns",
    "describe_cooperation": "coopcode.code_analysis.cooperation",
    "analyse_cooperation": "coopcode.code_analysis.cooperation",
    "Cooperation": "coopcode.records.cooperation",
    "mean_interval": "coopcode.evaluation.stats", "paired_difference": "coopcode.evaluation.stats",
    "compare_runs": "coopcode.evaluation.compare", "load_run": "coopcode.evaluation.compare",
    "pair_up": "coopcode.evaluation.compare",
    "train": "coopcode.training.run", "TrainConfig": "coopcode.training.config",
    "read_samples": "coopcode.evaluation.evaluate", "score_samples": "coopcode.evaluation.evaluate",
    # saved runs: trained adapters in checkpoints/
    "CheckpointInfo": "coopcode.training.saved_runs", "list_checkpoints": "coopcode.training.saved_runs",
    # events
    "Event": "coopcode.core.events", "JsonlWriter": "coopcode.core.events",
    "parse_event": "coopcode.core.events",
    "Started": "coopcode.core.events", "Log": "coopcode.core.events",
    "TokenDelta": "coopcode.core.events", "AttemptReady": "coopcode.core.events",
    "VerdictReady": "coopcode.core.events", "Progress": "coopcode.core.events",
    "Metric": "coopcode.core.events", "Finished": "coopcode.core.events",
    "Failed": "coopcode.core.events",
    "UserError": "coopcode.core.errors",
    # rendering results in the terminal
    "STATUS_STYLE": "coopcode.display.render", "pattern_line": "coopcode.display.render",
    # settings: options declared as config fields (flags, forms), the shared option groups
    "option": "coopcode.settings.options", "check_options": "coopcode.settings.options",
    "config_options": "coopcode.settings.options", "option_args": "coopcode.settings.options",
    "form_options": "coopcode.settings.options",
    "ModelChoice": "coopcode.settings.common", "AdapterChoice": "coopcode.settings.common",
    "SandboxChoice": "coopcode.settings.common",
    # files
    "cache_dir": "coopcode.core.paths",
    # what the TUI shows of divided work, adapters and saved runs
    "docstring_block": "coopcode.problems.contract",
    "BUILT_IN_SETS": "coopcode.problems",
    "Contract": "coopcode.problems",
    "planned_contract": "coopcode.schemes.contracts",
    "contract_stub": "coopcode.schemes.contracts",
    "MAIN_SEES": "coopcode.schemes",
    "with_main_seeing": "coopcode.schemes",
    "read_checkpoint": "coopcode.training.saved_runs",
    "train_scheme_names": "coopcode.training.config",
    "check_adapter": "coopcode.core.adapters",
    # trained runs by name from anywhere, and the defaults they bring
    "TrainedWith": "coopcode.core.adapters", "trained_with": "coopcode.core.adapters",
    "choose_adapters": "coopcode.core.adapters", "looked_in": "coopcode.core.adapters",
    "run_defaults": "coopcode.settings.common", "split_scheme": "coopcode.settings.common",
    "check_adapter_folders": "coopcode.engines.agents",
    "default_reward_name": "coopcode.rewards",
    "cooperation_of": "coopcode.code_analysis.cooperation",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> _Any:
    if name in _LAZY:
        return getattr(_import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'coopcode' has no attribute {name!r}")


def __dir__() -> list[str]:
    return [*globals(), *__all__]
