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

from timing.cli import main

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


def assert_clean(run: Run, command: str) -> None:
    """Exit 0, 1 or 2; on 2, exactly one short stderr line from the command, nothing on stdout,
    and never the last-resort message that names an internal exception."""
    assert run.code in (0, 1, 2), run
    assert "Traceback" not in run.err, run.err
    if run.code == 2:
        assert len(run.err_lines) == 1, run.err_lines
        assert run.err.startswith(f"lockstep {command}: "), run.err
        assert len(run.err_lines[0]) <= 400, run.err_lines[0][:200]
        assert "cannot audit the input" not in run.err, run.err


def with_margin(value: str) -> str:
    """The example stack with `lockstep:margin_s` (line 8) written as `value`."""
    return EXAMPLE_TEXT.replace("lockstep:margin_s: 5\n", f"lockstep:margin_s: {value}\n", 1)
