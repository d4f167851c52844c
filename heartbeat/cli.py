"""`lockstep heartbeat`: run the heartbeat service, or dry-run its decisions.

Imports nothing heavy at import time: kubernetes and pika are imported inside `run`'s
callees, so `lockstep check` stays fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from lockstep.timing.config import ConfigError
from lockstep.timing.heartbeat_config import (
    BROKER_URL_ENV,
    CONFIG_MOUNT,
    CONFIG_PATH_ENV,
    SECRET_KEY,
    RuntimeConfig,
)

EPILOG = f"""\
service:  lockstep heartbeat --config {CONFIG_MOUNT}
          (config: --config, else ${CONFIG_PATH_ENV}, else {CONFIG_MOUNT}; broker URL: ${BROKER_URL_ENV})
dry run:  lockstep heartbeat --once --dry-run [--stack STACK_CONFIG] [--observations FILE]
          (default: the bundled example stack's specs and heartbeat/examples/observations.json)
exit codes: 0 ok, 2 bad config or input (one line naming the field).
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="PATH", help="runtime config JSON (the ConfigMap's key)")
    parser.add_argument("--once", action="store_true", help="one replay, then exit (with --dry-run)")
    parser.add_argument("--dry-run", action="store_true", help="publish nothing: print what would be published")
    parser.add_argument("--stack", metavar="STACK_CONFIG",
                        help="dry run: take the specs from this Pulumi stack file (default: bundled example)")
    parser.add_argument("--observations", metavar="FILE",
                        help="dry run: recorded observations (default: heartbeat/examples/observations.json)")
    parser.add_argument("--json", action="store_true", help="dry run: print every message as a JSON line")
    parser.add_argument("--kubeconfig", metavar="PATH", help="outside a cluster: kubeconfig to use")


def load_config(path: str | Path) -> RuntimeConfig:
    from pydantic import ValidationError

    target = Path(path)
    try:
        text = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError([f"{target}: no such file"]) from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError([f"{target}: cannot read ({err.__class__.__name__})"]) from None
    try:
        return RuntimeConfig.model_validate_json(text)
    except ValidationError as err:
        lines = []
        for e in err.errors():
            loc = ".".join(str(p) for p in e["loc"]) or "(top level)"
            msg = "unknown key" if e["type"] == "extra_forbidden" else e["msg"]
            got = "" if e["type"] in ("missing", "extra_forbidden", "json_invalid") or isinstance(
                e.get("input"), (dict, list)) else f" (got {e.get('input')!r})"
            lines.append(f"{target}: {loc}: {msg}{got}")
        raise ConfigError(lines) from None


def _dry_config(args: argparse.Namespace) -> RuntimeConfig:
    if args.config:
        return load_config(args.config)
    from lockstep.timing.config import read_stack_file
    from lockstep.timing.heartbeat_config import runtime_config

    stack = read_stack_file(args.stack)
    try:
        return runtime_config(stack)
    except ValueError as err:
        raise ConfigError([f"{args.stack or 'example stack'}: lockstep:heartbeat: {err}"]) from None


def run(args: argparse.Namespace) -> int:
    if args.dry_run or args.once:
        if not (args.dry_run and args.once):
            raise ConfigError(["--once and --dry-run go together (a replay of recorded observations); "
                               "to run the service give --config only"])
        from lockstep.heartbeat import dryrun

        cfg = _dry_config(args)
        return dryrun.run(cfg, dryrun.load(args.observations), sys.stdout, as_json=args.json)
    if args.stack or args.observations:
        raise ConfigError(["--stack/--observations are dry-run options (add --once --dry-run)"])
    cfg = load_config(args.config or os.environ.get(CONFIG_PATH_ENV) or CONFIG_MOUNT)
    url = os.environ.get(BROKER_URL_ENV, "").strip()
    if not url:
        raise ConfigError([f"{BROKER_URL_ENV}: not set (the AMQP URL, from the Secret key {SECRET_KEY!r})"])
    if not url.startswith(("amqp://", "amqps://")):
        raise ConfigError([f"{BROKER_URL_ENV}: expected an amqp:// or amqps:// URL"])
    from lockstep.heartbeat.runtime import serve

    return serve(cfg, url, kubeconfig=args.kubeconfig)
