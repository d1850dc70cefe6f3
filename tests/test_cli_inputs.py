"""Every input gets an answer: each kind of bad file, number or name, through the real CLI.

Each case must be refused with exit 2 and one `error:` line on stderr (nothing else, since it
fails before any model or sandbox starts) naming the thing, and no traceback. The model is a
path that does not exist: were a check to run only after the model resolves, the error would
name the model instead and the needle assertion would fail, in milliseconds rather than after
a model load.

Unreadable files: the tests run as root, where `chmod 000` does not stop a read, so the kinds
that make a path unreadable are a FIFO (which would block a naive read forever), a dangling
symlink and a folder where a file is expected.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_helpers import assert_refused, coopcode

NO_MODEL = "/nonexistent/model"
PROBLEM = "examples/below_zero.py"

Case = tuple[tuple[str, ...], str]


def refused(cases: list[Case]) -> None:
    for args, needle in cases:
        assert_refused(coopcode(*args), needle)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """One bad file of each kind, as a .py, a .jsonl and a folder where that fits."""
    made: dict[str, Path] = {}

    def put(name: str, data: bytes) -> None:
        made[name] = tmp_path / name
        made[name].write_bytes(data)

    put("empty.py", b"")
    put("empty.jsonl", b"\n\n")
    put("binary.py", b"\x00\x01\x02\xff binary")
    put("binary.jsonl", b"\x00\x01\x02\xff binary")
    put("latin1.py", 'def f(x):\n    """caf\xe9"""\n'.encode("latin-1"))
    put("latin1.jsonl", b'{"task_id": "HumanEval/0", "completion": ""}\n{"task_id": "caf\xe9"}\n')
    put("not-gzip.jsonl.gz", b"plain text\n")
    put("a-file", b"x")
    for name in ("folder.py", "folder.jsonl", "empty-folder"):
        made[name] = tmp_path / name
        made[name].mkdir()
    made["fifo.py"] = tmp_path / "fifo.py"
    os.mkfifo(made["fifo.py"])
    made["fifo.jsonl"] = tmp_path / "fifo.jsonl"
    os.mkfifo(made["fifo.jsonl"])
    for suffix in (".py", ".jsonl"):
        made["dangling" + suffix] = tmp_path / ("dangling" + suffix)
        made["dangling" + suffix].symlink_to(tmp_path / ("gone" + suffix))
    made["missing.py"] = tmp_path / "missing.py"
    made["missing.jsonl"] = tmp_path / "missing.jsonl"
    return made


def s(path: Path) -> str:
    return str(path)


def test_missing_files(files: dict[str, Path], tmp_path: Path) -> None:
    refused([
        (("solve", s(files["missing.py"])), "no such file"),
        (("bench", "--problems", s(files["missing.jsonl"]), "--model", NO_MODEL), "no such file"),
        (("evaluate", s(files["missing.jsonl"]), "--sandbox", "process"), "no such file"),
        (("train", "--problems", s(files["missing.jsonl"]), "--out", s(tmp_path / "run")),
         "no such file"),
        (("sandbox", "run", s(files["missing.py"]), "--backend", "process"), "no such file"),
        (("checkpoints", "show", "no-such-run"), "no checkpoint run 'no-such-run'"),
        (("checkpoints", "list", "--dir", s(tmp_path / "nowhere")), "no such folder"),
        (("solve", PROBLEM, "--model", NO_MODEL, "--main-adapter", s(tmp_path / "nope")),
         "no such folder"),
        (("models", "pull", "gpt-17"), "unknown model 'gpt-17'"),
    ])


def test_empty_files_and_values(files: dict[str, Path], tmp_path: Path) -> None:
    refused([
        (("solve", s(files["empty.py"])), "empty file"),
        (("solve", ""), "no problem given"),
        (("bench", "--problems", s(files["empty.jsonl"]), "--model", NO_MODEL), "no problems in"),
        (("bench", "--problems", "", "--model", NO_MODEL), "no problems named"),
        (("bench", "--problems", s(files["empty-folder"]), "--model", NO_MODEL),
         "no .py problem files"),
        (("bench", "--k", "", "--model", NO_MODEL), "no k given"),
        (("bench", "--scheme", ",", "--model", NO_MODEL), "name at least one scheme"),
        (("evaluate", s(files["empty.jsonl"]), "--sandbox", "process"), "no samples in the file"),
        (("train", "--problems", s(files["empty.jsonl"]), "--out", s(tmp_path / "run")),
         "no problems in"),
        (("train", "--run", "", "--model", NO_MODEL), "--run ''"),
        (("sandbox", "run", s(files["empty.py"]), "--backend", "process"), "empty file"),
        (("checkpoints", "show", ""), "no run named"),
    ])


def test_binary_files(files: dict[str, Path], tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_bytes(b"\x00\xff\xfe")
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_bytes(b"\x00\xff\xfe")
    (adapter / "adapter_model.safetensors").write_bytes(b"")
    refused([
        (("solve", s(files["binary.py"])), "binary file"),
        (("bench", "--problems", s(files["binary.jsonl"]), "--model", NO_MODEL), "binary file"),
        (("bench", "--problems", s(files["not-gzip.jsonl.gz"]), "--model", NO_MODEL),
         "not a gzip file"),
        (("evaluate", s(files["binary.jsonl"]), "--sandbox", "process"), "binary file"),
        (("train", "--problems", s(files["binary.jsonl"]), "--out", s(tmp_path / "run")),
         "binary file"),
        (("sandbox", "run", s(files["binary.py"]), "--backend", "process"), "binary file"),
        (("solve", PROBLEM, "--model", s(model)), "config.json is not a JSON object"),
        (("solve", PROBLEM, "--model", NO_MODEL, "--main-adapter", s(adapter)),
         "adapter_config.json is not a JSON object"),
    ])


def test_non_utf8_files_name_the_line(files: dict[str, Path]) -> None:
    refused([
        (("solve", s(files["latin1.py"])), f"{files['latin1.py']}:2: not UTF-8"),
        (("evaluate", s(files["latin1.jsonl"]), "--sandbox", "process"),
         f"{files['latin1.jsonl']}:2: not UTF-8"),
        (("bench", "--problems", s(files["latin1.jsonl"]), "--model", NO_MODEL),
         f"{files['latin1.jsonl']}:2: not UTF-8"),
        (("sandbox", "run", s(files["latin1.py"]), "--backend", "process"),
         f"{files['latin1.py']}:2: not UTF-8"),
    ])


@pytest.mark.parametrize(("line", "needle"), [
    ("[1, 2]", "a JSON array, not an object"),
    ("3", "a JSON number, not an object"),
    ('"HumanEval/0"', "a JSON string, not an object"),
    ("null", "a JSON null, not an object"),
    ('{"task_id": "HumanEval/0",', "not valid JSON"),
])
def test_jsonl_lines_that_are_not_objects(tmp_path: Path, line: str, needle: str) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text('{"task_id": "HumanEval/0", "completion": "    return 1\\n"}\n\n' + line + "\n")
    assert_refused(coopcode("evaluate", str(path), "--sandbox", "process"), f"{path}:3: {needle}")
    assert_refused(coopcode("bench", "--problems", str(path), "--model", NO_MODEL), f"{path}:")


def test_missing_keys_and_wrong_types(tmp_path: Path) -> None:
    def write(name: str, record: dict) -> str:
        (tmp_path / name).write_text(json.dumps(record) + "\n")
        return str(tmp_path / name)

    refused([
        (("evaluate", write("a.jsonl", {"task_id": "HumanEval/0"}), "--sandbox", "process"),
         ":1: no completion"),
        (("evaluate", write("b.jsonl", {"completion": "x"}), "--sandbox", "process"),
         ":1: no task_id"),
        (("evaluate", write("c.jsonl", {"task_id": "HumanEval/0", "completion": 5}),
          "--sandbox", "process"), ":1: completion must be a string"),
        (("evaluate", write("d.jsonl", {"task_id": ["HumanEval/0"], "completion": "x"}),
          "--sandbox", "process"), ":1: task_id must be a string"),
        (("bench", "--problems", write("e.jsonl", {"task_id": "t/0", "prompt": "def f():\n"}),
          "--model", NO_MODEL), "lacks entry_point, test"),
        (("bench", "--problems", write("f.jsonl", {"task_id": "t/0", "prompt": 3, "entry_point": "f",
                                                   "test": "x"}), "--model", NO_MODEL),
         "lacks prompt"),
    ])


def test_unknown_task_id(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text('{"task_id": "HumanEval/0", "completion": ""}\n'
                    '{"task_id": "Nope/1", "completion": ""}\n')
    refused([
        (("evaluate", str(path), "--sandbox", "process"),
         f"{path}:2: task_id 'Nope/1' is not in humaneval:all"),
        (("evaluate", str(path), "--sandbox", "process", "--problems", PROBLEM),
         f"{path}:1: task_id 'HumanEval/0' is not in {PROBLEM}"),
        (("solve", "HumanEval/999", "--model", NO_MODEL), "no such HumanEval task"),
    ])


def test_folder_where_a_file_is_expected(files: dict[str, Path], tmp_path: Path) -> None:
    samples = tmp_path / "samples.jsonl"
    samples.write_text('{"task_id": "HumanEval/0", "completion": ""}\n')
    refused([
        (("solve", s(files["folder.py"])), "a folder, where a problem file is expected"),
        (("evaluate", s(files["folder.jsonl"]), "--sandbox", "process"),
         "a folder, where a samples file is expected"),
        (("evaluate", s(samples), "--k", "1", "--sandbox", "process", "--out", s(tmp_path)),
         "a folder, where --out needs a file path"),
        (("sandbox", "run", s(files["folder.py"]), "--backend", "process"),
         "a folder, where a .py file is expected"),
        (("train", "--problems", s(files["empty-folder"]), "--out", s(tmp_path / "run")),
         "no .py problem files"),
    ])


def test_file_where_a_folder_is_expected(files: dict[str, Path], tmp_path: Path) -> None:
    a_file = s(files["a-file"])
    samples = tmp_path / "samples.jsonl"
    samples.write_text('{"task_id": "HumanEval/0", "completion": ""}\n')
    refused([
        (("bench", "--problems", PROBLEM, "--n", "1", "--k", "1", "--model", NO_MODEL,
          "--out", a_file), "a file, where --out needs a folder"),
        (("bench", "--problems", PROBLEM, "--n", "1", "--k", "1", "--model", NO_MODEL,
          "--out", a_file + "/run"), "is a file, not a folder: choose another --out"),
        (("train", "--model", NO_MODEL, "--out", a_file + "/run"), "cannot write to"),
        (("evaluate", s(samples), "--k", "1", "--sandbox", "process", "--out", a_file + "/r.jsonl"),
         "is a file, not a folder"),
        (("checkpoints", "list", "--dir", a_file), "a file, where --dir needs the folder"),
        (("checkpoints", "show", a_file), "a file, where a run folder is expected"),
        (("solve", PROBLEM, "--model", a_file), "a file, where a model folder is expected"),
        (("solve", PROBLEM, "--model", NO_MODEL, "--helper-adapter", a_file),
         "a file, where an adapter folder is expected"),
        (("train", "--model", NO_MODEL, "--out", s(tmp_path / "run"), "--main-adapter", a_file),
         "a file, where an adapter folder is expected"),
    ])


def test_unreadable_paths_fifo_and_dangling_symlink(files: dict[str, Path], tmp_path: Path) -> None:
    """Root reads through chmod 000; a FIFO and a dangling symlink are unreadable to anyone."""
    refused([
        (("solve", s(files["fifo.py"])), "not a regular file"),
        (("evaluate", s(files["fifo.jsonl"]), "--sandbox", "process"), "not a regular file"),
        (("bench", "--problems", s(files["fifo.jsonl"]), "--model", NO_MODEL), "not a regular file"),
        (("train", "--problems", s(files["fifo.jsonl"]), "--out", s(tmp_path / "run")),
         "not a regular file"),
        (("sandbox", "run", s(files["fifo.py"]), "--backend", "process"), "not a regular file"),
        (("solve", s(files["dangling.py"])), "a broken symlink"),
        (("evaluate", s(files["dangling.jsonl"]), "--sandbox", "process"), "a broken symlink"),
        (("bench", "--problems", s(files["dangling.jsonl"]), "--model", NO_MODEL),
         "a broken symlink"),
        (("sandbox", "run", s(files["dangling.py"]), "--backend", "process"), "broken symlink"),
    ])


def test_wrong_types_are_one_line_usage_errors(tmp_path: Path) -> None:
    refused([
        (("bench", "--n", "abc"), "Invalid value for '--n'"),
        (("bench", "--limit", "1.5"), "Invalid value for '--limit'"),
        (("bench", "--max-new-tokens", "ten"), "Invalid value for '--max-new-tokens'"),
        (("bench", "--turns", "two"), "Invalid value for '--turns'"),
        (("bench", "--k", "a,b", "--model", NO_MODEL), "comma-separated"),
        (("solve", PROBLEM, "--temperature", "warm"), "Invalid value for '--temperature'"),
        (("solve", PROBLEM, "--seed", "abc"), "Invalid value for '--seed'"),
        (("evaluate", "x.jsonl", "--timeout", "soon"), "Invalid value for '--timeout'"),
        (("train", "--group-size", "x"), "Invalid value for '--group-size'"),
        (("sandbox", "run", PROBLEM, "--timeout", "x"), "Invalid value for '--timeout'"),
    ])
    done = coopcode("bench", "--n", "abc")
    assert "see `coopcode bench --help`" in done.stderr


def test_numbers_out_of_range(tmp_path: Path) -> None:
    out = ("--out", str(tmp_path / "run"))
    samples = tmp_path / "samples.jsonl"
    samples.write_text('{"task_id": "HumanEval/0", "completion": ""}\n')
    refused([
        (("solve", PROBLEM, "--model", NO_MODEL, "--n", "0"), "--n must be at least 1"),
        (("solve", PROBLEM, "--model", NO_MODEL, "--max-new-tokens", "0"),
         "--max-new-tokens must be at least 1"),
        (("solve", PROBLEM, "--model", NO_MODEL, "--turns", "-1"), "--turns must be at least 1"),
        (("solve", PROBLEM, "--model", NO_MODEL, "--timeout", "0"), "--timeout must be in (0, 3600]"),
        (("solve", PROBLEM, "--model", NO_MODEL, "--temperature", "-0.5"), "--temperature"),
        (("bench", "--model", NO_MODEL, "--n", "-1", "--k", "1"), "--n must be at least 1"),
        (("bench", "--model", NO_MODEL, "--k", "0"), "k must be at least 1"),
        (("bench", "--model", NO_MODEL, "--k", "1,20", "--n", "10"), "k=20 is larger than n=10"),
        (("bench", "--model", NO_MODEL, "--limit", "0", *out), "--limit must be at least 1"),
        (("bench", "--model", NO_MODEL, "--turns", "0", *out), "--turns must be at least 1"),
        (("bench", "--model", NO_MODEL, "--max-new-tokens", "-5", *out), "--max-new-tokens"),
        (("bench", "--model", NO_MODEL, "--timeout", "-1", *out), "--timeout"),
        (("bench", "--model", NO_MODEL, "--temperature", "6", *out), "--temperature"),
        (("evaluate", str(samples), "--sandbox", "process", "--timeout", "0"), "--timeout"),
        (("evaluate", str(samples), "--sandbox", "process", "--k", "2"), "k=2 is larger than n=1"),
        (("train", "--model", NO_MODEL, "--turns", "0", *out), "--turns must be at least 1"),
        (("train", "--model", NO_MODEL, "--limit", "0", *out), "--limit must be at least 1"),
        (("train", "--model", NO_MODEL, "--max-new-tokens", "0", *out), "--max-new-tokens"),
        (("train", "--model", NO_MODEL, "--temperature", "0", *out), "--temperature must be in (0, 5]"),
        (("train", "--model", NO_MODEL, "--lora-dropout", "1.5", *out), "--lora-dropout"),
        (("train", "--model", NO_MODEL, "--weight-decay", "-1", *out), "--weight-decay"),
        (("train", "--model", NO_MODEL, "--threads", "0", *out), "--threads must be at least 1"),
        (("sandbox", "run", PROBLEM, "--backend", "process", "--timeout", "0"),
         "--timeout must be positive"),
    ])


def test_nan_and_infinity(tmp_path: Path) -> None:
    out = ("--out", str(tmp_path / "run"))
    samples = tmp_path / "samples.jsonl"
    samples.write_text('{"task_id": "HumanEval/0", "completion": ""}\n')
    refused([
        (("solve", PROBLEM, "--model", NO_MODEL, "--temperature", "nan"), "--temperature"),
        (("solve", PROBLEM, "--model", NO_MODEL, "--timeout", "nan"), "--timeout must be a finite"),
        (("solve", PROBLEM, "--model", NO_MODEL, "--timeout", "1e9"), "--timeout must be in"),
        (("bench", "--model", NO_MODEL, "--temperature", "inf", *out), "--temperature"),
        (("bench", "--model", NO_MODEL, "--timeout", "inf", *out), "--timeout must be a finite"),
        (("evaluate", str(samples), "--sandbox", "process", "--timeout", "nan"), "--timeout"),
        (("train", "--model", NO_MODEL, "--temperature", "nan", *out), "--temperature"),
        (("train", "--model", NO_MODEL, "--lr", "inf", *out), "--lr must be a positive number"),
        (("train", "--model", NO_MODEL, "--kl-coef", "inf", *out), "--kl-coef"),
        (("train", "--model", NO_MODEL, "--timeout", "inf", *out), "--timeout must be a finite"),
        (("train", "--model", NO_MODEL, "--early-stop-reward", "nan", *out), "--early-stop-reward"),
        (("sandbox", "run", PROBLEM, "--backend", "process", "--timeout", "nan"), "--timeout"),
        (("sandbox", "run", PROBLEM, "--backend", "process", "--timeout", "inf"), "--timeout"),
        (("bench", "--model", NO_MODEL, "--kv-cache-gb", "0", *out), "--kv-cache-gb"),
        (("solve", PROBLEM, "--model", NO_MODEL, "--kv-cache-gb", "nan"), "--kv-cache-gb"),
        (("solve", PROBLEM, "--model", NO_MODEL, "--engine", "openai", "--base-url",
          "http://127.0.0.1:9/v1", "--kv-cache-gb", "2"), "--kv-cache-gb is an option of the embedded"),
    ])


def test_unknown_names_fail_before_the_model(tmp_path: Path) -> None:
    out = ("--out", str(tmp_path / "run"))
    refused([
        (("solve", PROBLEM, "--model", NO_MODEL, "--scheme", "trio"), "unknown scheme 'trio'"),
        (("solve", PROBLEM, "--model", NO_MODEL, "--sandbox", "podman"), "unknown sandbox backend"),
        (("solve", PROBLEM, "--model", NO_MODEL, "--engine", "foo"), "unknown engine 'foo'"),
        (("solve", PROBLEM, "--model", NO_MODEL, "--dtype", "int8"), "--dtype int8"),
        (("bench", "--model", NO_MODEL, "--sandbox", "podman", *out), "unknown sandbox backend"),
        (("bench", "--model", NO_MODEL, "--problems", "humaneval:bogus"), "unknown HumanEval split"),
        (("bench", "--model", NO_MODEL, "--problems", "README.md"), "unknown problem format"),
        (("evaluate", "x.jsonl", "--sandbox", "podman"), "unknown sandbox backend"),
        (("train", "--model", NO_MODEL, "--sandbox", "podman", *out), "unknown sandbox backend"),
        (("train", "--model", NO_MODEL, "--run", "../escape"), "a run name is one folder name"),
        (("train", "--model", NO_MODEL, "--run", "a/b"), "a run name is one folder name"),
        (("sandbox", "run", PROBLEM, "--backend", "process", "--entry", "1x"), "--entry '1x'"),
    ])


def test_usage_errors_are_one_line() -> None:
    refused([
        (("bench", "--bogus"), "No such option: --bogus"),
        (("solve",), "Missing argument"),
        (("models", "pull", "a", "b"), "unexpected extra argument"),
        (("frobnicate",), "No such command 'frobnicate'"),
        (("checkpoints", "list", "--json", "extra"), "unexpected extra argument"),
    ])


def test_help_still_works() -> None:
    for args in (("--help",), ("bench", "--help"), ("checkpoints", "list", "--help")):
        done = coopcode(*args)
        assert done.returncode == 0, done.stderr
        assert "Usage" in done.stdout and not done.stderr
    bare = coopcode()  # no command: the help is the answer, with click's usage exit code
    assert bare.returncode == 2 and "Usage" in bare.stdout and "error:" not in bare.stderr


def test_every_bad_adapter_is_named_before_the_model_loads(tmp_path: Path) -> None:
    # Issue 42: the base loaded for ~20 s, then the error named only the helper's path.
    helper, main = tmp_path / "no-helper", tmp_path / "not-peft"
    main.mkdir()
    assert_refused(coopcode("solve", PROBLEM, "--model", NO_MODEL, "--helper-adapter", s(helper),
                            "--main-adapter", s(main)),
                   f"helper adapter {helper}: no such folder",
                   f"main adapter {main}: not a PEFT adapter folder")
