"""A function run in a forked child of this process, its result sent back pickled.

The child starts with everything this process has built (copy-on-write: nothing is sent to
it), so a batch that is expensive to build and cheap to split is judged in slices, one per
core. Where `fork` is missing (Windows), or other threads run (a fork copies only the calling
thread, and a lock another thread holds stays held in the child), callers work in one process.
"""

from __future__ import annotations

import os
import pickle
import signal
import threading
from typing import Any, Callable


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


class Pending:
    """`fn(*args)` running in a forked child: `result()` waits for it, `cancel()` ends it.
    `ChildFailed` when no child can be started."""

    def __init__(self, fn: Callable[..., Any], *args: Any) -> None:
        self._pid = 0
        try:
            read, write = os.pipe()
        except OSError as err:  # out of file descriptors
            raise ChildFailed(f"cannot start a worker process: {err}") from None
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
                try:
                    data = pickle.dumps((True, fn(*args)), protocol=pickle.HIGHEST_PROTOCOL)
                except BaseException as err:  # noqa: BLE001 - reported to the parent, which decides
                    data = pickle.dumps((False, f"{type(err).__name__}: {err}"))
                with open(write, "wb") as pipe:
                    pipe.write(data)
            except BaseException:  # noqa: BLE001 - nothing to report to: the parent sees no result
                code = 1
            finally:
                os._exit(code)  # no exit handlers, no flush of buffers the parent also holds
        os.close(write)
        self._pid, self._read = pid, read

    def result(self) -> Any:
        """The child's return value; `ChildFailed` when it raised or died."""
        with open(self._read, "rb") as pipe:
            data = pipe.read()
        _, status = os.waitpid(self._pid, 0)
        self._pid = 0
        if not data:
            raise ChildFailed(f"worker process ended without a result (wait status {status})")
        ok, value = pickle.loads(data)
        if not ok:
            raise ChildFailed(value)
        return value

    def cancel(self) -> None:
        """End the child (the caller stopped waiting for it); no-op once its result was read."""
        if self._pid:
            try:
                os.kill(self._pid, signal.SIGKILL)
                os.waitpid(self._pid, 0)
            except ChildProcessError:
                pass
            os.close(self._read)
            self._pid = 0
