"""The output stream, once: text that the user's locale cannot encode degrades to ASCII, a
write that fails (a full disk, a closed pipe) is one line and exit 2 instead of a traceback,
and a bad value is echoed only as a short prefix.

`install()` runs at the start of `timing.cli.main`; every command then prints as before.
"""

from __future__ import annotations

import codecs
import io
import os
import sys
from typing import Any, Final

# What lockstep's messages use beyond ASCII, and what an ASCII-only terminal shows instead.
ASCII: Final = {"×": "x", "→": "->", "≥": ">=", "≤": "<=", "–": "-", "—": "-", "…": "...",
                "←": "<-", "≠": "!=", "±": "+/-", "‘": "'", "’": "'", "“": '"', "”": '"'}
ERRORS: Final = "lockstep-ascii"
SHOWN_CHARS: Final = 40  # how much of a bad value an error line echoes


def _degrade(err: UnicodeError) -> tuple[str, int]:
    if not isinstance(err, UnicodeEncodeError):
        raise err
    bad = err.object[err.start:err.end]
    return "".join(ASCII.get(ch, "?") for ch in bad), err.end


codecs.register_error(ERRORS, _degrade)


class OutputError(Exception):
    """Standard output cannot be written (exit 2, or 0 for a reader that closed the pipe)."""

    def __init__(self, err: OSError) -> None:
        self.errno = err.errno
        self.reason = (err.strerror or err.__class__.__name__).lower()
        super().__init__(self.reason)

    @property
    def closed_pipe(self) -> bool:
        return isinstance(self.__cause__, BrokenPipeError)


class _Out(io.TextIOWrapper):
    """The process's stdout with every write failure raised as `OutputError`."""

    def write(self, s: str) -> int:
        try:
            return super().write(s)
        except OSError as err:
            raise OutputError(err) from err

    def flush(self) -> None:
        try:
            super().flush()
        except OSError as err:
            raise OutputError(err) from err


def install() -> None:
    """Degrade unencodable text on stdout and stderr; on the real stdout, raise write failures
    as `OutputError`. Idempotent; a stream that is not a text file (a test's StringIO) is left
    as it is."""
    if sys.stdout is not None and sys.stdout is sys.__stdout__ and hasattr(sys.stdout, "buffer"):
        old = sys.stdout
        old.flush()
        sys.stdout = _Out(old.buffer, encoding=old.encoding, errors=ERRORS,
                          line_buffering=old.line_buffering, write_through=old.write_through)
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", ERRORS) != ERRORS:
            try:
                reconfigure(errors=ERRORS)
            except (ValueError, OSError):  # a closed or detached stream: nothing to degrade
                pass


def discard_stdout() -> None:
    """After a failed write: drop what is still buffered, so the interpreter's last flush does
    not fail again with its own message (the pattern Python's docs give for SIGPIPE)."""
    out = sys.stdout
    if isinstance(out, _Out):
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, out.fileno())
            os.close(devnull)
        except OSError:
            pass


def cut(value: Any, limit: int = SHOWN_CHARS) -> str:
    """`repr(value)`, or its first `limit` characters and `…` when it is longer: an error line
    names a bad value without echoing all of it."""
    if isinstance(value, str) and len(value) > limit * 4:
        value = value[: limit * 4]  # a 20 MiB string is never repr'd whole
    shown = repr(value) if not hasattr(value, "isoformat") else repr(value.isoformat())
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def cut_middle(text: str, limit: int) -> str:
    """Text of at most `limit` characters: whole, or its start and its end with `…` between."""
    if len(text) <= limit:
        return text
    head = limit // 2
    return text[:head] + "…" + text[len(text) - (limit - head - 1):]


def cut_text(text: str, limit: int = SHOWN_CHARS) -> str:
    """A name (a path, a key) shown as itself, or its first `limit` characters and `…`."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
