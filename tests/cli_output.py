"""What every command-line error must look like, and the parsers the help tests read."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys


def one_line_error(err: str) -> str:
    """The error line of ``err`` and its fix line, if any; asserts the CLI's shape: no
    traceback, exactly one line starting with ``error:``, at most one ``  fix:`` line after
    it and nothing else after."""
    assert "Traceback" not in err, err
    lines = err.rstrip("\n").splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("error:")]
    assert len(starts) == 1, err
    tail = lines[starts[0] + 1 :]
    assert len(tail) <= 1 and all(line.startswith("  fix: ") for line in tail), err
    return "\n".join(lines[starts[0] :])


def subcommand_parser(name: str) -> argparse.ArgumentParser:
    """The parser of ``livecam NAME`` (its options and help), from the real command line."""
    from livecam.cli.main import build_parser

    subparsers = next(
        a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    )
    parser: argparse.ArgumentParser = subparsers.choices[name]
    return parser


def livecam_with_commands(args: list[str], stdout: int = subprocess.PIPE) -> subprocess.Popen[str]:
    """``python -m livecam run ARGS --commands --quiet``, its stdin a pipe for the commands
    (text, unbuffered output, stderr piped)."""
    return subprocess.Popen(
        [sys.executable, "-m", "livecam", "run", *args, "--commands", "--quiet"],
        stdin=subprocess.PIPE,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
