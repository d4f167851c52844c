"""Run the CLI in-process, as a user would run it, and capture what a user would see.

`cli(argv, stdin)` calls `timing.cli.main` with stdin, stdout and stderr replaced; an
exception that escapes `main` is not caught here (it is the traceback a user would get, so
the test fails with it). `assert_clean` is the house rule for bad input.
"""

from __future__ import annotations

import contextlib
import io
import sys
from dataclasses import dataclass
from pathlib import Path

from lockstep.timing.cli import LINE_CHARS, main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_TEXT = (ROOT / "Pulumi.example.yaml").read_text(encoding="utf-8")


@dataclass
class Run:
    code: int
    out: str
    err: str

    @property
    def err_lines(self) -> list[str]:
        return self.err.splitlines()


def cli(argv: list[str], stdin: bytes = b"") -> Run:
    out, err = io.StringIO(), io.StringIO()
    old = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exit_:  # argparse's own exits (usage errors, --help)
                code = exit_.code if isinstance(exit_.code, int) else 2
    finally:
        sys.stdin = old
    return Run(code, out.getvalue(), err.getvalue())


def clean_problem(run: Run, command: str) -> str | None:
    """What breaks the house rule for bad input in `run`, or None: exit 0, 1 or 2; on 2, nothing
    on stdout and one line per problem, each from the command, short, and never the
    last-resort message that names an internal exception."""
    if run.code not in (0, 1, 2):
        return f"exit {run.code}"
    if "Traceback" in run.err:
        return "a traceback on stderr"
    if run.code == 2:
        if not run.err_lines:
            return "exit 2 without a message"
        for line in run.err_lines:
            if not line.startswith(f"lockstep {command}: "):
                return f"a line not from the command: {line[:200]!r}"
            if len(line) > LINE_CHARS:
                return f"a line of {len(line)} characters"
            if "cannot audit the input" in line:
                return f"the last-resort message: {line[:200]!r}"
    return None


def assert_clean(run: Run, command: str) -> None:
    problem = clean_problem(run, command)
    assert problem is None, (problem, run.code, run.err[:2000])


def with_margin(value: str) -> str:
    """The example stack with `lockstep:margin_s` (line 8) written as `value`."""
    return EXAMPLE_TEXT.replace("lockstep:margin_s: 5\n", f"lockstep:margin_s: {value}\n", 1)
