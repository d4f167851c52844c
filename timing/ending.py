"""What a command built, left for the end of the process instead of freed one by one.

`cli.entry` ends the process with `os._exit` once the command has returned, when one thread
runs and no exit handler is registered (see there). Everything the command built then goes
with the process: freeing it object by object first only costs time (after an audit of 4,000
documents, the documents, links and findings are ~1.5 million objects: ~0.04 s). A command
hands such objects to `keep`; outside `entry` (a test, a program calling `main`) nothing is
kept and they are freed as usual.
"""

from __future__ import annotations

_kept: list[object] | None = None


def begin() -> None:
    """The process ends right after the command (`cli.entry` calls this before `main`)."""
    global _kept
    _kept = []


def keep(*objects: object) -> None:
    """Leave `objects` to the process's end, when it ends at once (else a no-op)."""
    if _kept is not None:
        _kept.extend(objects)


def kept() -> int:
    return 0 if _kept is None else len(_kept)
