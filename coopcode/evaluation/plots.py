"""Figures for reports: PNG files drawn by matplotlib's Agg backend (no display needed).

Every figure says what it shows without its caption: labelled axes, a legend, and a title
naming the model, n, the temperature and the problem set. Intervals are the 95% intervals
over problems of `coopcode.evaluation.stats`. matplotlib is imported inside each function so that
importing coopcode (and every command that draws nothing) stays fast.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from coopcode.code_analysis.patterns import PATTERNS
from coopcode.records.vocabulary import Role

SIZE = (7.5, 4.8)  # inches at DPI: 1050 x 672 px, legible on a laptop and in a paper draft
DPI = 140


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only: works over ssh, in CI and in a child process
    import matplotlib.pyplot as plt

    return plt


def run_title(what: str, meta: Mapping[str, Any]) -> str:
    """`what`, then the model, n, temperature and problem set on a second line."""
    details = [f"{meta.get('model', '?')}", f"n={meta.get('n', '?')}",
               f"T={meta.get('temperature', '?')}", f"problems {meta.get('problems', '?')}"]
    return f"{what}\n" + ", ".join(details)


def _fit(title: str, width: int) -> str:
    """Each line of `title` wrapped at `width` characters: a long run name must not run off
    the figure's edge (tight_layout does not shrink titles)."""
    import textwrap

    return "\n".join(part for line in title.split("\n")
                     for part in (textwrap.wrap(line, width) or [""]))


def _save(fig: Any, path: Path) -> Path:
    plt = _pyplot()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def plot_pass_at_k(rows: Sequence[Mapping[str, Any]], ks: Sequence[int], meta: Mapping[str, Any],
                   path: Path, what: str = "pass@k with 95% intervals over problems") -> Path:
    """pass@k against k, one line per method, with 95% interval bars."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=SIZE)
    for i, row in enumerate(rows):
        ys = [100 * float(row[f"pass@{k}"]) for k in ks]
        lows, highs = [], []
        for k, y in zip(ks, ys):
            ci = row.get(f"pass@{k}_ci")
            lows.append(y - 100 * ci[0] if ci else 0.0)
            highs.append(100 * ci[1] - y if ci else 0.0)
        # Methods side by side at each k: a small offset keeps overlapping bars apart.
        offset = (i - (len(rows) - 1) / 2) * 0.06 * (max(ks) - min(ks) or 1)
        ax.errorbar([k + offset for k in ks], ys, yerr=[lows, highs], marker="o", capsize=4,
                    label=f"{row['method']} ({row.get('problems', '?')} problems)")
    ax.set_xticks(list(ks))
    ax.set_xlabel("k (samples drawn per problem)")
    ax.set_ylabel("pass@k (%)")
    ax.set_ylim(-2, 102)  # points at 0% and 100% stay whole
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    ax.set_title(_fit(run_title(what, meta), 90), fontsize=10)
    return _save(fig, path)


def plot_patterns(rows: Sequence[Mapping[str, Any]], meta: Mapping[str, Any], path: Path) -> Path:
    """The share of samples carrying each cooperation pattern, bars grouped by pattern."""
    plt = _pyplot()
    rows = [r for r in rows if r.get("cooperation")]
    fig, ax = plt.subplots(figsize=SIZE)
    width = 0.8 / max(1, len(rows))
    for i, row in enumerate(rows):
        xs = [j + (i - (len(rows) - 1) / 2) * width for j in range(len(PATTERNS))]
        ax.bar(xs, [100 * float(row["cooperation"].get(p, 0.0)) for p in PATTERNS], width,
               label=str(row["method"]))
    ax.set_xticks(range(len(PATTERNS)), PATTERNS)
    ax.set_xlabel("cooperation pattern (a program may carry several)")
    ax.set_ylabel("samples with the pattern (%)")
    ax.set_ylim(0, 100)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="upper right")
    ax.set_title(_fit(run_title("How main uses the helper", meta), 90), fontsize=10)
    return _save(fig, path)


def plot_paired(a: Sequence[float], b: Sequence[float], names: tuple[str, str], title: str,
                path: Path) -> Path:
    """Per-problem pass@1 of run A against run B; points above the diagonal gained."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.4, 5.6))
    # Many problems sit on the same point (0,0 or 1,1): size by count, and say the count.
    counts = Counter((round(100 * x, 1), round(100 * y, 1)) for x, y in zip(a, b))
    groups = {"gained": [], "lost": [], "same": []}  # type: dict[str, list[tuple[float, float, int]]]
    for (x, y), c in counts.items():
        groups["gained" if y > x else "lost" if y < x else "same"].append((x, y, c))
    colours = {"gained": "tab:green", "lost": "tab:red", "same": "tab:gray"}
    for name, points in groups.items():
        if points:
            ax.scatter([p[0] for p in points], [p[1] for p in points],
                       s=[30 + 25 * p[2] for p in points], alpha=0.6, color=colours[name],
                       label=f"{name}: {sum(p[2] for p in points)}")
            for x, y, c in points:
                if c > 1:
                    ax.annotate(str(c), (x, y), ha="center", va="center", fontsize=8)
    ax.plot([0, 100], [0, 100], color="black", linewidth=0.8, linestyle="--")
    ax.set_xlim(-5, 105)
    ax.set_ylim(-5, 105)
    ax.set_xlabel(f"A: {names[0]} pass@1 per problem (%)")
    ax.set_ylabel(f"B: {names[1]} pass@1 per problem (%)")
    ax.grid(alpha=0.3)
    # Outside the axes: inside, it hides the points in a corner (a problem that went 1/10 -> 9/10).
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), title="problems", markerscale=0.7)
    ax.set_title(_fit(title, 70), fontsize=10)
    return _save(fig, path)


# The validation figures a run with --eval-every logs at its evaluation steps (step 0 too).
VALIDATION_CURVES = (("val/pass@1", "validation pass@1"),
                     ("val/own_work", "validation: main's own work"),
                     ("val/helper_solves", "validation: helper solves"))


def plot_training(history: Sequence[Mapping[str, Any]], title: str, path: Path) -> Path:
    """Training curves: the reward and each of its terms, pass rate (and the validation
    figures, where the run evaluated), cooperation pattern rates and loss."""
    from coopcode.rewards import term_keys

    plt = _pyplot()
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(2, 2, figsize=(10, 7), sharex=True)

    def curve(ax: Any, key: str, label: str, **style: Any) -> bool:
        points = [(r["step"], float(r[key])) for r in history
                  if isinstance(r.get(key), int | float) and isinstance(r.get("step"), int)]
        if points:
            ax.plot(*zip(*points), **{"marker": ".", "label": label, **style})
        return bool(points)

    ax = axes[0][0]
    for key in ("reward/mean", *term_keys(history)):
        curve(ax, key, key.split("/", 1)[1])
    ax.set_ylabel("reward (mean over joint actions)")
    ax.set_title("reward and its terms")
    ax = axes[0][1]
    curve(ax, "pass_rate", "pass rate")
    curve(ax, "main_calls_helper", "main calls the helper")
    # Evaluations are a few steps apart: a marker on each, dashed between them.
    validated = [curve(ax, key, label, marker="o", markersize=4, linestyle="--")
                 for key, label in VALIDATION_CURVES]
    ax.set_ylabel("share of joint actions (validation: of samples)" if any(validated)
                  else "share of joint actions")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("pass rate, helper use and validation" if any(validated)
                 else "pass rate and helper use")
    ax = axes[1][0]
    # Who did the work (the headline measures) in bold, then the patterns' shapes.
    headline = [curve(ax, f"coop/{key}", label, linewidth=2.5, color=colour)
                for key, label, colour in (("own_work", "main's own work", "black"),
                                           ("helper_solves", "helper alone solves", "red"))]
    drawn = [curve(ax, f"coop/{p}", p, alpha=0.6 if any(headline) else 1.0) for p in PATTERNS]
    if not any(drawn):
        ax.text(0.5, 0.5, "no pattern metrics in this run\n(trained before they were logged)",
                ha="center", va="center", transform=ax.transAxes, color="gray")
    ax.set_ylabel("share of joint actions")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("cooperation: own work, the helper alone, patterns" if any(headline)
                 else "cooperation patterns")
    ax = axes[1][1]
    curve(ax, "loss", "total")
    for role in (Role.HELPER, Role.MAIN):
        curve(ax, f"{role}/loss", role)
    ax.set_ylabel("policy-gradient loss")
    ax.set_title("loss")
    for ax in axes.flat:
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    for ax in axes[1]:
        ax.set_xlabel("training step")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole numbers
    fig.suptitle(title, fontsize=11)
    return _save(fig, path)
