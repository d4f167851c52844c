"""`lockstep`: one entry point for every command (also `python -m lockstep`).

Each command lives in its own module exposing `add_arguments(parser)` and `run(args) -> int`
(and an optional `EPILOG`); its help line is in `COMMANDS`. Only the module of the command
named on the line is imported (the others' help lines come from the table), and modules
import heavy dependencies (pulumi, kubernetes, pika) only inside `run`, so every command
starts fast.

Exit codes: 0 ok, 1 findings (or lost requests, uncaught mutations), 2 unreadable or
invalid input — always one line per problem naming the file and line, the field or the
option, never a traceback. Input is read through `timing.inputs` (limits, regular files
only, stdin as `-`); output goes through `timing.textio` (ASCII fallbacks for a locale that
cannot encode the text, a failed write as one line and exit 2).
"""

from __future__ import annotations

import argparse
import atexit
import functools
import importlib
import os
import sys
import threading
from dataclasses import dataclass
from typing import Any, NoReturn, Sequence

from lockstep.timing import ending, textio
from lockstep.timing.inputs import ConfigError


@dataclass(frozen=True, slots=True)
class Command:
    """Where a command lives, and its one-line help (`lockstep --help` lists every command
    from this table without importing any of them)."""

    module: str
    help: str


COMMANDS: dict[str, Command] = {  # in the order `lockstep --help` lists them
    "check": Command("lockstep.timing.cmd_check",
                     "validate a stack's timing model and print every finding with its slack"),
    "plan": Command("lockstep.timing.cmd_plan",
                    "print the drain, rollout, failure and failover timelines (text, json or mermaid)"),
    "render": Command("lockstep.infra.render_cli",
                      "write every resource the Pulumi program would create (Kubernetes YAML, AWS JSON), offline"),
    "audit": Command("lockstep.timing.audit.cli",
                     "audit existing Kubernetes manifests (AWS Load Balancer Controller annotations, "
                     "TargetGroupBinding) and `aws elbv2` target-group JSON against the timing invariants"),
    "simulate": Command("lockstep.timing.cmd_simulate",
                        "simulate a rollout, a pod replacement and a crash of every service; count requests "
                        "that reached nothing (502) apart from deliberate 503s"),
    "fix": Command("lockstep.timing.cmd_fix",
                   "find the smallest change of the stack's numbers that satisfies every rule; print it as a diff "
                   "(or --write it), or name the rules that conflict"),
    "mutate": Command("lockstep.timing.cmd_mutate",
                      "push every number of the stack to wrong values; report which rule rejects each and "
                      "whether the simulation loses requests or blocks falsely"),
    "heartbeat": Command("lockstep.heartbeat.cli",
                         "run the heartbeat service (or --once --dry-run: replay recorded observations and "
                         "print what it would publish)"),
}

EPILOG = """\
Without STACK_CONFIG, commands use the bundled example stack (Pulumi.example.yaml).
exit codes: 0 consistent, 1 error findings, 2 unreadable or invalid input.
docs: README.md, docs/CONFIG.md (every config key), INVARIANTS catalogue in docs/.
"""


# An error line longer than this is cut in its middle (a message quoting a huge name): its
# start names the file and line, its end what was wrong and the range allowed. Paths and values
# are already cut to 200 characters each; a line naming two of them stays whole.
LINE_CHARS = 600


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2) that echo a bad value only as a short prefix."""

    def error(self, message: str) -> None:
        self.exit(2, one_line(f"{self.prog}: error: {message} (see {self.prog} --help)") + "\n")

    def _get_value(self, action: argparse.Action, arg_string: str):  # type: ignore[no-untyped-def]
        try:
            return super()._get_value(action, arg_string)
        except argparse.ArgumentError as err:
            raise argparse.ArgumentError(action, _shorter(err.message, arg_string)) from None

    def _check_value(self, action: argparse.Action, value) -> None:  # type: ignore[no-untyped-def]
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError as err:
            raise argparse.ArgumentError(action, _shorter(err.message, value)) from None


def _shorter(message: str, value: object) -> str:
    return message.replace(repr(value), textio.cut(value)) if isinstance(value, str) else message


def one_line(text: str) -> str:
    """A message as one line of at most `LINE_CHARS` characters, the middle cut if it is longer
    (the end says what is wrong: it must not be the part that goes)."""
    return textio.cut_middle(" ".join(text.splitlines()), LINE_CHARS)


def version() -> str:
    """The installed distribution's version (pyproject.toml is the one place it is written)."""
    from importlib import metadata

    try:
        return metadata.version("lockstep")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def extra_providing(module: str) -> str | None:
    """The optional extra (`pip install 'lockstep[EXTRA]'`) whose requirements provide the
    top-level import `module`, read from the installed distribution's metadata."""
    from importlib import metadata

    try:
        requires = metadata.requires("lockstep") or []
    except metadata.PackageNotFoundError:
        return None
    top = module.partition(".")[0]
    for req in requires:
        name, _, marker = req.partition(";")
        dist = name.strip().split()[0]
        for cut in "<>=!~[(":
            dist = dist.split(cut)[0]
        if "extra ==" in marker and dist.strip().lower().replace("-", "_") == top.lower():
            return marker.split("extra ==")[1].strip().strip("'\"")
    return None


def named_command(argv: Sequence[str]) -> str | None:
    """The command the line names: its first word that is not an option (the top-level
    options, --help and --version, take no value), if that is a command (anything else gets
    the parser of no command, which says the choice is invalid: one parser, not one per word)."""
    word = next((word for word in argv if not word.startswith("-")), None)
    return word if word in COMMANDS else None


class _Version(argparse.Action):
    """`--version`, the version read from the installed metadata only when asked: reading it
    (importlib.metadata) took ~20 ms of every command's start."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str | None = None) -> None:  # noqa: A002 - argparse's name
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        parser._print_message(f"lockstep {version()}\n", sys.stdout)
        parser.exit()


@functools.cache  # one parser per command and process: a fuzz run calls `main` 100,000 times
def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser for a line naming `command`: that command's module is imported for its
    arguments; every other command gets its help line only (it cannot be the one parsed)."""
    parser = _Parser(prog="lockstep", description="Keep the timeouts of a service's delivery "
                     "path in step, and prove it.", epilog=EPILOG,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=_Version, help="show the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name, entry in COMMANDS.items():
        if name != command:
            sub.add_parser(name, help=entry.help)
            continue
        try:
            module = importlib.import_module(entry.module)
        except ModuleNotFoundError as err:
            if err.name is None or not entry.module.startswith(err.name):
                raise
            continue  # a command whose module is not installed (tests assert all are)
        cmd = sub.add_parser(name, help=entry.help, description=entry.help,
                             epilog=getattr(module, "EPILOG", None),
                             formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(cmd)
        cmd.set_defaults(_module=module)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    textio.install()
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(named_command(argv))
    args = parser.parse_args(argv)
    try:
        code = int(args._module.run(args))
        sys.stdout.flush()  # a full disk shows here when the output fits the buffer
        return code
    except ConfigError as err:
        for line in err.lines:
            print(one_line(f"lockstep {args.command}: {line}"), file=sys.stderr)
        return 2
    except textio.OutputError as err:
        textio.discard_stdout()
        if err.closed_pipe:  # the reader stopped reading (`| head`): not an error of ours
            return 0
        print(f"lockstep {args.command}: cannot write the output: {err.reason}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except ModuleNotFoundError as err:
        extra = extra_providing(err.name or "")
        if extra is None:
            raise
        print(f"lockstep {args.command}: needs the {extra!r} extra (module {err.name} is not installed): "
              f"pip install 'lockstep[{extra}]'", file=sys.stderr)
        return 2


def entry() -> NoReturn:
    """The `lockstep` command (and `python -m lockstep`): `main`, then the exit. With one
    thread and no exit handler registered, nothing is left for the interpreter's own exit but
    to free every object one by one (0.08 s after an audit of 4,000 documents): the process
    ends at once instead, its output flushed. What the command hands to `ending.keep` is not
    freed before that either."""
    registered = getattr(atexit, "_ncallbacks", None)  # (CPython's count of exit handlers)
    if registered is not None:
        ending.begin()  # (if the process does not end at once after all, the interpreter frees them)
    code = main()
    if registered is not None and registered() == 0 and threading.active_count() == 1:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):  # the interpreter's exit reports it, as without this
            sys.exit(code)
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
