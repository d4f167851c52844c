"""`lockstep audit`: the invariants of INVARIANTS.md on manifests and target groups that exist.

reader (files → documents with line numbers) → shape (wrong types are invalid input, named
at file:line; the rest is still judged) → adapt (documents → the linker's neutral resources)
→ `timing.bind` (the one linker and judging step the policy pack uses too) → report (text,
JSON) or SARIF. No rule and no link is decided here: this package reads and reports.

Importing the package is cheap: `lockstep --help` and every other command build the audit's
argument parser (`timing.audit.cli`), which must not pull in the linker and the extractors
(a third of `lockstep check`'s start-up on a 1,000-service stack). The names below come from
`timing.audit.core` on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["Audit", "Judged", "Located", "audit", "grouped", "with_annotations"]


def __getattr__(name: str) -> Any:
    core = importlib.import_module("lockstep.timing.audit.core")
    try:
        return getattr(core, name)
    except AttributeError:
        raise AttributeError(f"module 'lockstep.timing.audit' has no attribute {name!r}") from None
