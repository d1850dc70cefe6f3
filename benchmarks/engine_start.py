"""What an engine's start costs before its first token: loading the model, then the copies of
the weights its kernels multiply by (oneDNN's prepacked layout, the fused step's pairs).

    .venv/bin/python benchmarks/engine_start.py [--builds 4]
    PYTHONPATH=OTHER_TREE .venv/bin/python benchmarks/engine_start.py   # another revision

In one process: the embedded default model loaded (`load_engine`), its decode loop started
(`engine.batcher()`: the kernels remembered for this machine, the copies they use made),
then the fused step (`FusedDecoder`, its weights packed in pairs) built `--builds` times
more: the first builds meet fresh pages from the kernel, later ones may reuse the memory the
one before gave back.
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--builds", type=int, default=4)
    args = ap.parse_args()
    t0 = time.perf_counter()
    from coopcode.engines import load_engine
    from coopcode.engines.embedded import fused_decode

    t1 = time.perf_counter()
    engine = load_engine(None, "transformers")
    t2 = time.perf_counter()
    engine.batcher()
    t3 = time.perf_counter()
    print(f"imports {t1 - t0:.2f} s, model loaded {t2 - t1:.2f} s, decode loop started (the "
          f"kernels' weight copies) {t3 - t2:.2f} s; kernels {engine.kernels}")
    fused = []
    for _ in range(args.builds):
        t = time.perf_counter()
        decoder = fused_decode.FusedDecoder(engine.base)
        fused.append(time.perf_counter() - t)
        del decoder
    print("fused step built again (its pairs packed), s: " + " ".join(f"{x:.2f}" for x in fused))
    engine.close()


if __name__ == "__main__":
    main()
