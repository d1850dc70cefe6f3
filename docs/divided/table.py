"""Table 2, "divided work", from the committed samples: writes table.md and table.json here.

    .venv/bin/python docs/divided/table.py           # write them, and print the markdown
    .venv/bin/python docs/divided/table.py --check   # exit 1 when the committed files differ

Each row is a folder here (baselines/<scheme>/, final/<row>/) holding one bench of
compose:test: samples.jsonl.gz and meta.json, read by `divided_table.py` beside this file.
Nothing is run: every figure is read from the samples (what was run in the sandbox at bench
time).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from divided_table import build_table, render_markdown  # beside this file

HERE = Path(__file__).resolve().parent


def main() -> int:
    table = build_table(HERE)
    text = render_markdown(table)
    data = json.dumps(table.to_json(), indent=1) + "\n"
    if "--check" in sys.argv[1:]:
        same = (HERE / "table.md").read_text() == text and (HERE / "table.json").read_text() == data
        print("table.md and table.json are what the samples give" if same else
              "table.md or table.json differs from what the samples give: rerun docs/divided/table.py")
        return 0 if same else 1
    (HERE / "table.md").write_text(text)
    (HERE / "table.json").write_text(data)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
