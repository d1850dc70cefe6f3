"""Where `make test`'s time went: the slowest tests and files of its last run.

`make test` writes every test's time to runs/test-report.xml (pytest's JUnit report; the
serial tests, run after, to runs/test-report-serial.xml); this prints the total, the N
slowest tests and the N slowest files of both, so a suite that has outgrown its time shows
where to cut. On two workers the tests' total is about twice the wall time they took.

    .venv/bin/python scripts/test_durations.py [REPORT ...] [--top 30]
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path


def test_file(classname: str) -> str:
    """tests.sandbox.test_x.TestY -> tests/sandbox/test_x.py (JUnit names a class, not a file)."""
    parts = classname.split(".")
    for i, part in enumerate(parts):
        if part.startswith("test_"):
            return "/".join(parts[:i + 1]) + ".py"
    return classname


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="*", type=Path,
                        default=[Path("runs/test-report.xml"), Path("runs/test-report-serial.xml")])
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args(argv)
    cases = []
    for path in args.reports:
        try:
            root = ET.parse(path).getroot()
        except (OSError, ET.ParseError) as e:
            print(f"test_durations: cannot read {path} ({e}); run `make test` first",
                  file=sys.stderr)
            return 1
        cases += [(float(c.get("time", 0)), f"{c.get('classname')}::{c.get('name')}")
                  for c in root.iter("testcase")]
    by_file: dict[str, float] = defaultdict(float)
    for seconds, name in cases:
        by_file[test_file(name.split("::")[0])] += seconds
    total = sum(s for s, _ in cases)
    print(f"{len(cases)} tests, {total / 60:.1f} min in tests")
    print(f"\nslowest {args.top} tests:")
    for seconds, name in sorted(cases, reverse=True)[:args.top]:
        print(f"  {seconds:7.1f} s  {name}")
    print(f"\nslowest {args.top} files:")
    for name, seconds in sorted(by_file.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"  {seconds:7.1f} s  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
