"""Table 2's records: a row's figures, its pairings, the goal checked, the table.

Frozen dataclasses that `divided_table.py` (beside this file) builds from the committed
samples and renders as markdown; `to_json` is the only way out to table.json, and each one
gives the dict that table.json has always held, key for key and in the same order, so the
committed file stays what the samples give byte for byte.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from coopcode.evaluation import stats

Interval = tuple[float, float]  # (low, high) of a 95% interval


def _interval_json(ci: Interval | None) -> list[float] | None:
    return None if ci is None else list(ci)


@dataclass(frozen=True)
class DividedRow:
    """A row of the table: which bench it is, and where its folder is."""

    key: str
    method: str
    scheme: str
    folder: str  # relative to the table's root (docs/divided)
    trained: bool = False
    alone_of: str | None = None  # the trained pair whose main agent this row benches alone


@dataclass(frozen=True)
class Share:
    """`count` of `of` samples; the rate is None where there were none."""

    count: int
    of: int

    @property
    def rate(self) -> float | None:
        return self.count / self.of if self.of else None

    def to_json(self) -> dict[str, Any]:
        return {"count": self.count, "of": self.of, "rate": self.rate}


@dataclass(frozen=True)
class SampleProfile:
    """What a row's samples are: five shares of all its samples, "both needed" of the
    passing ones (the fields in the order the table shows them)."""

    main_calls_aux: Share
    helper_contract: Share  # the helper passes all of aux's own tests
    main_with_reference: Share  # main passes with the reference aux
    helper_solves: Share  # the helper's code alone solves the task
    main_copies_helper: Share
    both_needed: Share  # of the passing samples

    def of_samples(self) -> tuple[Share, ...]:
        """The shares of all samples, in the table's order (all but "both needed")."""
        return (self.main_calls_aux, self.helper_contract, self.main_with_reference,
                self.helper_solves, self.main_copies_helper)

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name).to_json() for f in fields(self)}


@dataclass(frozen=True)
class BenchTime:
    """A bench's wall time as meta.json has it: the sessions of a resumed bench added up;
    `timed_sessions` those that left a time (a killed session leaves none)."""

    wall_seconds: float | None
    sessions: int | None
    timed_sessions: int | None  # None: a meta.json written before it counted them

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> BenchTime:
        """From a bench's meta.json (a figure that is not a number is not there)."""
        wall, sessions, timed = (meta.get(key) for key in
                                 ("wall_seconds", "sessions", "timed_sessions"))
        return cls(wall if isinstance(wall, int | float) else None,
                   sessions if isinstance(sessions, int) else None,
                   timed if isinstance(timed, int) else None)

    @property
    def cell(self) -> str:
        """"11 min", "11 min (3 sessions)", or "≥ 11 min (2 sessions)" where meta.json counts
        the timed sessions and one is missing: the figure is then a lower bound."""
        wall, sessions, timed = self.wall_seconds, self.sessions, self.timed_sessions
        if wall is None:
            return "—"
        low = "≥ " if timed is not None and sessions is not None and timed < sessions else ""
        many = f" ({sessions} sessions)" if (sessions or 1) > 1 else ""
        return f"{low}{wall / 60:.0f} min{many}"


@dataclass(frozen=True)
class AdapterStep:
    """Where a trained row's adapters are: the step its manifest says, the run's planned
    length, and the last step its metrics record (below `total_steps` when it stopped early)."""

    step: int
    total_steps: int
    trained_to: int

    @property
    def label(self) -> str:
        """' (step 0 of 135)', or ' (step 0; stopped at 45 of 135)' for a run stopped early."""
        if self.trained_to < self.total_steps:
            return f" (step {self.step}; stopped at {self.trained_to} of {self.total_steps})"
        return f" (step {self.step} of {self.total_steps})"

    def to_json(self) -> list[int]:
        return [self.step, self.total_steps, self.trained_to]


@dataclass(frozen=True)
class PassAt:
    """pass@k over a row's problems: the mean of the per-problem estimates, its interval
    per problem and clustered by HumanEval source (None: fewer than two problems, or, for
    the clustered one, too few sources)."""

    mean: float
    ci: Interval | None
    ci_clustered: Interval | None


@dataclass(frozen=True)
class RowFigures:
    """One bench's figures, from its folder's samples and meta.json. `per_problem` (task ->
    k -> pass@k) and `sources` (each problem's HumanEval sources) are for the pairings and
    stay out of table.json."""

    problems: int
    samples: int
    n: int | None
    time: BenchTime
    profile: SampleProfile
    adapter_step: AdapterStep | None
    pass_at: Mapping[int, PassAt]  # in the table's order of k
    per_problem: Mapping[str, Mapping[int, float]]
    sources: Mapping[str, tuple[str, ...]]

    @property
    def clustered(self) -> bool:
        """Whether its problems have HumanEval sources, so that each pass@k has a
        source-clustered interval (compose's rows; HumanEval's problems have none)."""
        return bool(self.sources)

    def by_problem(self, k: int) -> dict[str, float]:
        """Each problem's pass@k."""
        return {t: p[k] for t, p in self.per_problem.items()}

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "problems": self.problems, "samples": self.samples, "n": self.n,
            "wall_seconds": self.time.wall_seconds, "sessions": self.time.sessions,
            "timed_sessions": self.time.timed_sessions, "profile": self.profile.to_json(),
            "adapter_step": None if self.adapter_step is None else self.adapter_step.to_json()}
        for k, p in self.pass_at.items():
            out[f"pass@{k}"] = p.mean
            out[f"pass@{k}_ci"] = _interval_json(p.ci)
            if self.clustered:  # no key at all where the problems have no sources
                out[f"pass@{k}_ci_clustered"] = _interval_json(p.ci_clustered)
        return out


@dataclass(frozen=True)
class RowEntry:
    """A row as the table lists it: its spec, and its figures where it was run."""

    spec: DividedRow
    figures: RowFigures | None  # None: its folder is not there yet

    @property
    def run(self) -> bool:
        return self.figures is not None

    @property
    def method_label(self) -> str:
        """The row's method, with the step its adapters are at where it has one."""
        step = self.figures.adapter_step if self.figures is not None else None
        return self.spec.method + (step.label if step is not None else "")

    def to_json(self) -> dict[str, Any]:
        s = self.spec
        return {"row": s.key, "method": s.method, "scheme": s.scheme, "folder": s.folder,
                "trained": s.trained, "run": self.run,
                **(self.figures.to_json() if self.figures is not None else {})}


@dataclass(frozen=True)
class PairedAt:
    """B - A at pass@k over the problems both rows hold: the per-problem interval, and the
    source-clustered one beside it where the problems have sources."""

    k: int
    problems: int
    paired: stats.PairedDifference

    @property
    def diff(self) -> stats.Estimate:
        return self.paired.difference

    @property
    def clustered(self) -> stats.ClusteredEstimate | None:
        return self.paired.clustered

    def to_json(self) -> dict[str, Any]:
        return {"k": self.k, "problems": self.problems, **self.paired.to_dict()}


@dataclass(frozen=True)
class Pairing:
    """A row against another, per k (`per_k` is empty where they share no problem)."""

    row: str
    method: str
    against: str
    against_method: str
    per_k: tuple[PairedAt, ...]

    def at(self, k: int) -> PairedAt | None:
        return next((d for d in self.per_k if d.k == k), None)

    def to_json(self) -> dict[str, Any]:
        return {"row": self.row, "method": self.method, "against": self.against,
                "against_method": self.against_method,
                "per_k": [d.to_json() for d in self.per_k]}


@dataclass(frozen=True)
class GoalPart:
    """One comparison of the goal: a trained pair against `against` at pass@1 (`at_1` None
    where that row was not benched). Met when the source-clustered interval's low end is
    above 0, or the per-problem one's where the problems have no sources;
    `met_per_problem` says what the per-problem interval alone would."""

    against: str
    against_method: str
    at_1: PairedAt | None

    @property
    def diff(self) -> float | None:
        return None if self.at_1 is None else self.at_1.diff.mean

    @property
    def ci(self) -> tuple[float | None, float | None] | None:
        return None if self.at_1 is None else (self.at_1.diff.low, self.at_1.diff.high)

    @property
    def ci_clustered(self) -> tuple[float | None, float | None] | None:
        cl = self.at_1.clustered if self.at_1 is not None else None
        return None if cl is None else (cl.low, cl.high)

    @property
    def met_per_problem(self) -> bool:
        low = self.ci[0] if self.ci is not None else None
        return low is not None and low > 0

    @property
    def met(self) -> bool:
        if self.ci_clustered is None:
            return self.met_per_problem
        low = self.ci_clustered[0]
        return low is not None and low > 0

    def to_json(self) -> dict[str, Any]:
        return {"against": self.against, "against_method": self.against_method,
                "diff": self.diff,
                "ci": None if self.ci is None else list(self.ci),
                "ci_clustered": None if self.ci_clustered is None else list(self.ci_clustered),
                "met_per_problem": self.met_per_problem, "met": self.met}


@dataclass(frozen=True)
class GoalCheck:
    """The goal checked for one trained pair: each comparison, and "both needed" in at
    least half of its passing samples; met only when every part is there and met."""

    row: str
    method: str  # with the step its adapters are at
    against: tuple[GoalPart, ...]
    both_needed: Share

    @property
    def both_needed_met(self) -> bool:
        return bool(self.both_needed.of) and 2 * self.both_needed.count >= self.both_needed.of

    @property
    def met(self) -> bool:
        return self.both_needed_met and all(p.met for p in self.against)

    def to_json(self) -> dict[str, Any]:
        return {"row": self.row, "method": self.method,
                "against": [p.to_json() for p in self.against],
                "both_needed": [self.both_needed.count, self.both_needed.of],
                "both_needed_met": self.both_needed_met, "met": self.met}


@dataclass(frozen=True)
class Intervals:
    """What the intervals are: their level and method, the clustered one's, and how many
    HumanEval sources compose's problems are built from (0: none)."""

    level: float
    method: str
    clustered_method: str
    sources: int

    def to_json(self) -> dict[str, Any]:
        return {"level": self.level, "method": self.method,
                "clustered_method": self.clustered_method, "sources": self.sources}


@dataclass(frozen=True)
class CarryOver:
    """The trained main agents alone on HumanEval's test split, and their pairings with the
    untrained single model there."""

    rows: tuple[RowEntry, ...]
    comparisons: tuple[Pairing, ...]

    def to_json(self) -> dict[str, Any]:
        return {"rows": [e.to_json() for e in self.rows],
                "comparisons": [c.to_json() for c in self.comparisons]}


@dataclass(frozen=True)
class DividedTable:
    """Table 2: the rows, their pairings, the goal checked, the carry-over to HumanEval."""

    ks: tuple[int, ...]
    rows: tuple[RowEntry, ...]
    comparisons: tuple[Pairing, ...]
    goal: tuple[GoalCheck, ...]
    humaneval: CarryOver
    interval: Intervals

    def to_json(self) -> dict[str, Any]:
        """What table.json holds."""
        return {"ks": list(self.ks), "rows": [e.to_json() for e in self.rows],
                "comparisons": [c.to_json() for c in self.comparisons],
                "goal": [g.to_json() for g in self.goal],
                "humaneval": self.humaneval.to_json(), "interval": self.interval.to_json()}
