"""A function run in a forked child of this process, its result (or each item it yields, as it
is made: `Stream`) sent back pickled.

The child starts with everything this process has built (copy-on-write: nothing is sent to
it), so a batch that is expensive to build and cheap to split is judged in slices, one per
core. Where `fork` is missing (Windows), or other threads run (a fork copies only the calling
thread, and a lock another thread holds stays held in the child), callers work in one process.
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
import threading
from typing import Any, BinaryIO, Callable, Iterable

try:
    import fcntl
except ImportError:  # not a POSIX system (no fork there either)
    fcntl = None  # type: ignore[assignment]


def default_jobs() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def available() -> bool:
    return hasattr(os, "fork") and threading.active_count() == 1


class ChildFailed(RuntimeError):
    """The child raised, or exited without a result: the caller does the work itself."""


# Each message: its length and kind, then that many bytes (a pickled item, or the failure's words).
HEADER = struct.Struct("<QB")
ITEM, END, FAILED = 0, 1, 2
# The pipe holds this much unread (Linux lets an unprivileged process widen one to 1 MiB): a
# child streaming its items then seldom waits for a parent busy with its own share.
PIPE_BYTES = 1 << 20


class Stream:
    """`fn(*args)`, an iterable, run in a forked child that sends each item as soon as it is
    made: `ready()` takes the items that have arrived without waiting, `rest()` waits for the
    others, `cancel()` ends the child. `ChildFailed` when no child can be started, or when it
    raised or died (from `ready()` or `rest()`)."""

    def __init__(self, fn: Callable[..., Iterable[Any]], *args: Any) -> None:
        self._pid = 0
        try:
            read, write = os.pipe()
        except OSError as err:  # out of file descriptors
            raise ChildFailed(f"cannot start a worker process: {err}") from None
        if hasattr(fcntl, "F_SETPIPE_SZ"):  # (Linux)
            try:
                fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
            except OSError:  # over this user's limit: the default size works, only slower
                pass
        try:
            pid = os.fork()
        except OSError as err:  # out of processes or memory
            os.close(read)
            os.close(write)
            raise ChildFailed(f"cannot start a worker process: {err}") from None
        if pid == 0:  # pragma: no cover - the child (its coverage is not collected)
            code = 0
            try:
                os.close(read)
                with open(write, "wb") as pipe:
                    try:
                        for item in fn(*args):
                            _send(pipe, ITEM, pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL))
                        _send(pipe, END, b"")
                    except BaseException as err:  # noqa: BLE001 - reported to the parent, which decides
                        _send(pipe, FAILED, f"{type(err).__name__}: {err}".encode(errors="replace"))
            except BaseException:  # noqa: BLE001 - nothing to report to: the parent sees no end
                code = 1
            finally:
                os._exit(code)  # no exit handlers, no flush of buffers the parent also holds
        os.close(write)
        os.set_blocking(read, False)
        self._pid, self._read = pid, read
        self._buffer = bytearray()
        self._items: list[Any] = []

    def ready(self) -> list[Any]:
        """The items that have arrived since the last call, without waiting for more."""
        while self._pid:
            try:
                chunk = os.read(self._read, PIPE_BYTES)
            except BlockingIOError:
                break
            self._received(chunk)
        return self._taken()

    def rest(self) -> list[Any]:
        """Every item not taken yet, once the child has sent its last."""
        if self._pid:
            os.set_blocking(self._read, True)
        while self._pid:
            self._received(os.read(self._read, PIPE_BYTES))
        return self._taken()

    def cancel(self) -> None:
        """End the child (the caller stopped waiting for it); no-op once it has ended."""
        if self._pid:
            try:
                os.kill(self._pid, signal.SIGKILL)
                os.waitpid(self._pid, 0)
            except ChildProcessError:
                pass
            self._ended()

    def _received(self, chunk: bytes) -> None:
        """Load each whole message in the bytes read so far; at the end, reap the child."""
        if not chunk:  # the child closed its end without the end message
            _, status = os.waitpid(self._pid, 0)
            self._ended()
            raise ChildFailed(f"worker process ended without a result (wait status {status})")
        buffer = self._buffer
        buffer += chunk
        at = 0
        while len(buffer) - at >= HEADER.size:
            size, kind = HEADER.unpack_from(buffer, at)
            body = at + HEADER.size
            if len(buffer) - body < size:
                break
            at = body + size
            if kind == ITEM:
                with memoryview(buffer) as view:
                    self._items.append(pickle.loads(view[body:at]))
                continue
            os.waitpid(self._pid, 0)
            self._ended()
            if kind == FAILED:
                raise ChildFailed(buffer[body:at].decode(errors="replace"))
            break
        del buffer[:at]

    def _ended(self) -> None:
        os.close(self._read)
        self._pid = 0
        self._buffer = bytearray()

    def _taken(self) -> list[Any]:
        items, self._items = self._items, []
        return items


def _send(pipe: BinaryIO, kind: int, body: bytes) -> None:
    pipe.write(HEADER.pack(len(body), kind))
    pipe.write(body)
    pipe.flush()


class Pending(Stream):
    """`fn(*args)` running in a forked child: `result()` waits for its return value.
    `ChildFailed` when no child can be started, or when it raised or died."""

    def __init__(self, fn: Callable[..., Any], *args: Any) -> None:
        super().__init__(_one, fn, *args)

    def result(self) -> Any:
        """The child's return value; `ChildFailed` when it raised or died."""
        items = self.rest()
        if not items:  # (taken already)
            raise ChildFailed("the worker process's result was taken already")
        return items[0]


def _one(fn: Callable[..., Any], *args: Any) -> list[Any]:
    return [fn(*args)]
