"""`coopcode sandbox build | status | run` (the sub-app coopcode mounts)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sandbox_helpers import docker_or_skip
from typer.testing import CliRunner

from sandbox.cli import app

SOLUTION = """
def add(a, b):
    return a + b


def check(candidate):
    assert candidate(1, 2) == 3
    assert candidate(-1, 1) == 0


check(add)
"""


@pytest.fixture
def cli() -> CliRunner:
    return CliRunner()


def write(tmp_path: Path, text: str, name: str = "solution.py") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("backend", ["process", pytest.param("docker", marks=pytest.mark.docker)])
def test_run_json_for_a_passing_file(cli: CliRunner, tmp_path: Path, backend: str) -> None:
    if backend == "docker":
        docker_or_skip()
    result = cli.invoke(app, ["run", str(write(tmp_path, SOLUTION)), "--backend", backend, "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["passed"] is True and out["status"] == "passed" and out["backend"] == backend
    assert [t["status"] for t in out["tests"]] == ["passed", "passed"]
    assert {"syntax_ok", "runnable", "duration", "stdout", "n_passed", "n_tests"} <= set(out)


def test_run_exits_1_when_a_test_fails(cli: CliRunner, tmp_path: Path) -> None:
    wrong = SOLUTION.replace("return a + b", "return a - b")
    result = cli.invoke(app, ["run", str(write(tmp_path, wrong)), "--backend", "process"])
    assert result.exit_code == 1
    assert "FAILED: 0/2 tests passed" in result.stdout


def test_run_plain_asserts_with_timeout(cli: CliRunner, tmp_path: Path) -> None:
    slow = "def spin(n):\n    while True:\n        pass\n\nassert spin(1) == 1\n"
    result = cli.invoke(app, ["run", str(write(tmp_path, slow)), "--backend", "process",
                              "--timeout", "0.5", "--json"])
    assert result.exit_code == 1
    out = json.loads(result.stdout)
    assert out["status"] == "timeout" and out["passed"] is False


def test_run_file_without_tests_is_not_a_pass(cli: CliRunner, tmp_path: Path) -> None:
    result = cli.invoke(app, ["run", str(write(tmp_path, "def f():\n    return 1\n")),
                              "--backend", "process", "--json"])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["status"] == "no_tests"


@pytest.mark.parametrize("args, message", [
    (["run", "/nonexistent/solution.py"], "no such file"),
    (["run", "__FILE__", "--backend", "podman"], "unknown sandbox backend"),
    (["run", "__FILE__", "--timeout", "0"], "--timeout must be positive"),
])
def test_bad_input_is_one_line_and_exit_2(cli: CliRunner, tmp_path: Path, args: list[str],
                                          message: str) -> None:
    path = str(write(tmp_path, SOLUTION))
    result = cli.invoke(app, [path if a == "__FILE__" else a for a in args])
    assert result.exit_code == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output


def test_docker_backend_without_daemon_exits_2(cli: CliRunner, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    result = cli.invoke(app, ["run", str(write(tmp_path, SOLUTION)), "--backend", "docker"])
    assert result.exit_code == 2
    assert "no Docker daemon answers" in result.stderr


def test_status_json(cli: CliRunner) -> None:
    result = cli.invoke(app, ["status", "--json", "--no-probe"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert {"docker", "process", "auto_backend"} <= set(out)
    assert out["auto_backend"] in ("docker", "process")
    assert out["process"]["isolation"]


@pytest.mark.docker
def test_status_probes_a_pool_and_build_is_idempotent(cli: CliRunner) -> None:
    docker_or_skip()
    built = cli.invoke(app, ["build"])
    assert built.exit_code == 0, built.output
    tag = built.stdout.strip()
    assert tag.startswith("coopcode-sandbox:")
    result = cli.invoke(app, ["status"])
    assert result.exit_code == 0, result.output
    assert f"image         : {tag} (present)" in result.stdout
    assert "pool          : docker, 1 worker started" in result.stdout
