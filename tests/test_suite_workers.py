"""How `make test` spreads the suite over two workers (pytest-xdist, `--dist loadgroup`):
every test that needs the vLLM server runs on one worker, so one `vllm serve` starts, never
two at once. Checked by running those tests' collection on two workers with every test
skipped before its fixtures (no server starts)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VLLM_FILES = ("tests/test_openai_engine.py", "tests/test_vllm_engine.py",
              "tests/train/test_remote_rollouts.py")


def test_the_vllm_tests_run_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "skip_every_test.py").write_text(
        "import pytest\n\n\n@pytest.hookimpl(tryfirst=True)\n"
        "def pytest_runtest_setup(item):\n    pytest.skip('not run: only where it runs')\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-n", "2", "--dist", "loadgroup", "-p",
         "skip_every_test", "-p", "no:cacheprovider", "-m", "vllm", *VLLM_FILES],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    workers = re.findall(r"^\[(gw\d)\] .*SKIPPED (\S+)", done.stdout, re.M)
    assert len(workers) >= 10, done.stdout[-2000:]  # every vLLM test, each once
    assert len({worker for worker, _ in workers}) == 1, workers
    assert all(test.endswith("@vllm") for _, test in workers), workers

