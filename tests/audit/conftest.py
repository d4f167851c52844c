"""`run_audit(*argv, stdin=bytes)`: `lockstep audit` in-process, as the CLI runs it."""

from __future__ import annotations

import io
import json
import sys
from dataclasses import dataclass

import pytest

from lockstep.timing.cli import main


@dataclass
class Run:
    code: int
    out: str
    err: str

    @property
    def report(self) -> dict:
        return json.loads(self.out)

    def findings(self) -> list[dict]:
        return [{**f, "subject": s["subject"]} for s in self.report["subjects"] for f in s["findings"]]

    def notes(self) -> list[str]:
        r = self.report
        return r["notes"] + [n for s in r["subjects"] for n in s["notes"]]


@pytest.fixture
def run_audit(capsys, monkeypatch):
    def run(*argv: str, stdin: bytes | None = None) -> Run:
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
        code = main(["audit", *argv])
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)
    return run
