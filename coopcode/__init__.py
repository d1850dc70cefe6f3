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
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

# Torch's OpenMP threads spin while they wait for each other. On a machine where other work
# takes a core away (a training run beside a bench, CI neighbours), a spinning 2-thread
# matmul waits on a descheduled thread each step: measured here 5.9 s/step instead of 1.1.
# Passive waiting costs little when the machine is idle. Must be set before torch loads.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# coopcode parses Python on several threads; CPython's AST constructor is not safe for
# that without a lock (sandbox/ast_lock.py), installed by importing the sandbox package.
import sandbox as _sandbox  # noqa: E402,F401

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
    "open_sandbox": "sandbox", "Sandbox": "sandbox", "Job": "sandbox", "Verdict": "sandbox",
    "SandboxUnavailable": "sandbox",
    # schemes and the scheduler
    "SCHEMES": "coopcode.schemes", "Scheme": "coopcode.schemes", "get_scheme": "coopcode.schemes",
    "has_helper": "coopcode.schemes", "DEFAULT_SCHEME": "coopcode.schemes",
    "check_problems_fit": "coopcode.schemes",
    "scheme_names": "coopcode.schemes", "trainable_scheme_names": "coopcode.schemes",
    "SampleState": "coopcode.schemes", "Steps": "coopcode.schemes", "adapter_of": "coopcode.schemes",
    "Scheduler": "coopcode.collaboration.scheduler",
    "SampleSpec": "coopcode.collaboration.scheduler",
    "sample_specs": "coopcode.collaboration.scheduler",
    "Attempt": "coopcode.records.attempts",
    # the words records share: who wrote a part, where aux's contract came from, why a
    # completion stopped
    "Role": "coopcode.records.vocabulary", "ContractSource": "coopcode.records.vocabulary",
    "FinishReason": "coopcode.records.vocabulary",
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

if _TYPE_CHECKING:  # what the lazy names are, for type checkers (they import nothing here)
    from coopcode.code_analysis.cooperation import (  # noqa: F401
        analyse_cooperation,
        cooperation_of,
        describe_cooperation,
    )
    from coopcode.code_analysis.patterns import classify_cooperation  # noqa: F401
    from coopcode.collaboration.scheduler import SampleSpec, Scheduler, sample_specs  # noqa: F401
    from coopcode.collaboration.solve import SolveConfig, SolveResult, judge, solve  # noqa: F401
    from coopcode.core.adapters import (  # noqa: F401
        TrainedWith,
        check_adapter,
        choose_adapters,
        looked_in,
        trained_with,
    )
    from coopcode.core.errors import UserError  # noqa: F401
    from coopcode.core.events import (  # noqa: F401
        AttemptReady,
        Event,
        Failed,
        Finished,
        JsonlWriter,
        Log,
        Metric,
        Progress,
        Started,
        TokenDelta,
        VerdictReady,
        parse_event,
    )
    from coopcode.core.paths import cache_dir  # noqa: F401
    from coopcode.display.render import STATUS_STYLE, pattern_line  # noqa: F401
    from coopcode.engines import (  # noqa: F401
        Engine,
        EngineConfig,
        EngineKind,
        GenerationRequest,
        SamplingParams,
        ScriptedEngine,
        load_engine,
        register_engine,
    )
    from coopcode.engines.agents import (  # noqa: F401
        Agents,
        attach_adapters,
        check_adapter_folders,
        open_agents,
        resolve_adapter_path,
    )
    from coopcode.evaluation.at_k import acc_at_k_by_problem, pass_at_k, pass_at_k_by_problem  # noqa: F401
    from coopcode.evaluation.bench import BenchConfig, BenchSummary, run_bench  # noqa: F401
    from coopcode.evaluation.compare import compare_runs, load_run, pair_up  # noqa: F401
    from coopcode.evaluation.evaluate import read_samples, score_samples  # noqa: F401
    from coopcode.evaluation.stats import mean_interval, paired_difference  # noqa: F401
    from coopcode.models.catalog import CATALOG, DEFAULT_MODEL  # noqa: F401
    from coopcode.models.embedded import is_ready  # noqa: F401
    from coopcode.plugins import load_plugins  # noqa: F401
    from coopcode.problems import (  # noqa: F401
        BUILT_IN_SETS,
        Contract,
        Problem,
        load_humaneval,
        load_problem_file,
        load_problems,
        parse_problem_source,
    )
    from coopcode.problems.contract import docstring_block  # noqa: F401
    from coopcode.records.attempts import Attempt  # noqa: F401
    from coopcode.records.cooperation import Cooperation  # noqa: F401
    from coopcode.records.vocabulary import ContractSource, FinishReason, Role  # noqa: F401
    from coopcode.rewards import (  # noqa: F401
        Reward,
        RewardBreakdown,
        RewardInput,
        default_reward_name,
        format_terms,
        get_reward,
        register_reward,
        reward_names,
        term_keys,
    )
    from coopcode.schemes import (  # noqa: F401
        DEFAULT_SCHEME,
        MAIN_SEES,
        SCHEMES,
        SampleState,
        Scheme,
        Steps,
        adapter_of,
        check_problems_fit,
        get_scheme,
        has_helper,
        register_scheme,
        scheme_names,
        trainable_scheme_names,
        with_main_seeing,
    )
    from coopcode.schemes.contracts import contract_stub, planned_contract  # noqa: F401
    from coopcode.settings.common import (  # noqa: F401
        AdapterChoice,
        ModelChoice,
        SandboxChoice,
        run_defaults,
        split_scheme,
    )
    from coopcode.settings.options import (  # noqa: F401
        check_options,
        config_options,
        form_options,
        option,
        option_args,
    )
    from coopcode.training.config import TrainConfig, train_scheme_names  # noqa: F401
    from coopcode.training.run import train  # noqa: F401
    from coopcode.training.saved_runs import CheckpointInfo, list_checkpoints, read_checkpoint  # noqa: F401
    from sandbox import Job, Sandbox, SandboxUnavailable, Verdict, open_sandbox  # noqa: F401


def __getattr__(name: str) -> _Any:
    if name in _LAZY:
        return getattr(_import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'coopcode' has no attribute {name!r}")


def __dir__() -> list[str]:
    return [*globals(), *__all__]
