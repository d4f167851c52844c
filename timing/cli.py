"""`lockstep`: one entry point for every command (also `python -m timing`).

Each command lives in its own module exposing `HELP`, `add_arguments(parser)` and
`run(args) -> int`. Modules import heavy dependencies (pulumi, kubernetes, pika) only
inside `run`, so `check`, `plan` and `audit` start fast.

Exit codes: 0 ok, 1 findings (or lost requests, uncaught mutations), 2 unreadable or
invalid input — always a one-line message naming the field, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from timing.config import ConfigError

COMMANDS: dict[str, str] = {
    "check": "timing.cmd_check",
    "plan": "timing.cmd_plan",
    "render": "infra.render_cli",
    "audit": "timing.audit.cli",
    "simulate": "timing.cmd_simulate",
    "mutate": "timing.cmd_mutate",
    "heartbeat": "heartbeat.cli",
}

EPILOG = """\
Without STACK_CONFIG, commands use the bundled example stack (Pulumi.example.yaml).
exit codes: 0 consistent, 1 error findings, 2 unreadable or invalid input.
docs: README.md, docs/CONFIG.md (every config key), INVARIANTS catalogue in docs/.
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's own exit code 2, one line
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="lockstep", description="Keep the timeouts of a service's delivery "
                     "path in step, and prove it.", epilog=EPILOG,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name, module_name in COMMANDS.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as err:
            if err.name is None or not module_name.startswith(err.name):
                raise
            continue  # a command whose module is not installed (tests assert all are)
        cmd = sub.add_parser(name, help=module.HELP, description=module.HELP,
                             epilog=getattr(module, "EPILOG", None),
                             formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(cmd)
        cmd.set_defaults(_module=module)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args._module.run(args))
    except ConfigError as err:
        for line in err.lines:
            print(f"lockstep {args.command}: {line}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
