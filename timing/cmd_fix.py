"""`lockstep fix [STACK_CONFIG]`: the nearest numbers every rule accepts, as a patch.

Reads `Pulumi.<stack>.yaml`, finds with a solver the smallest change to its whole-number
fields that makes every error rule hold (warnings kept or mended where they can be), checks
the answer with `check` and the simulation, and prints one line per changed field naming the
rules that need it, then a unified diff of the file (comments and formatting kept). `--write`
applies it. When no numbers within the fields' ranges can satisfy the rules (with the
`--keep` fields pinned), it names the smallest set of rules and pins that conflict.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from lockstep.timing.inputs import ConfigError

EPILOG = """\
fields are named by their place in the config, list items by name (or by index, as findings do):
  services.api.shutdown.drain_s, services.api.lb.health_check.interval_s, watchdog.period_s,
  services.web.path[0].upstream_idle_s
  (--keep takes such names or patterns: 'services.*.lb.*')
never moved (facts, not settings): the margin, the app's warm-up, longest request, catch-up
and agreed recovery budget, agreed outage budgets and RTO, the clients' reconnect time, and
propagation delays.
exit codes: 0 consistent (already, or with the printed change), 1 no change fixes it (a
conflict, a rule no number decides, or a fixed stack the simulation still finds losing
requests), 2 unreadable or invalid input"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from lockstep.timing.cmd_check import add_stack_argument

    add_stack_argument(parser)
    parser.add_argument("--keep", nargs="+", action="extend", default=[], metavar="FIELD",
                        help="fields the fix must not change (you do not own them: a shared ALB, a platform budget)")
    parser.add_argument("--write", action="store_true", help="apply the change to STACK_CONFIG")
    parser.add_argument("--format", choices=("text", "json"), default="text")


def _needs_extra(module: str) -> ConfigError:
    return ConfigError([f"needs the 'fix' extra (module {module} is not installed): pip install 'lockstep[fix]'"])


def run(args: argparse.Namespace) -> int:
    from lockstep.timing.config import EXAMPLE, stack_values_from_text
    from lockstep.timing.inputs import STDIN, display_name, read_text, write_atomically

    try:
        from lockstep.timing.fix.solve import fix  # z3 first: the message names the solver
        from lockstep.timing.fix.patch import diff, patch_text, verify
    except ModuleNotFoundError as err:
        raise _needs_extra(err.name or "z3") from None
    if args.write and args.stack_config in (None, STDIN):
        raise ConfigError(["--write needs a STACK_CONFIG file (not the bundled example or standard input)"])
    target = EXAMPLE if args.stack_config is None else args.stack_config
    name = EXAMPLE.name if args.stack_config is None else display_name(target)
    text = read_text(target)
    values, _ = stack_values_from_text(text, name)
    result = fix(values, tuple(args.keep))
    new_text = text
    if result.changes:
        new_text = patch_text(text, [(c.knob.path, c.new) for c in result.changes])
        verify(new_text, name, result.values)
    lost = _simulation_losses(result) if result.changes and result.ok else []
    fixed = result.ok and not lost
    patch = diff(text, new_text, name)
    if args.format == "json":
        print(json.dumps({
            "stack": name, "ok": fixed,
            "changes": [{"field": c.knob.name, "path": list(c.knob.path), "from": c.knob.value, "to": c.new,
                         "rules": list(c.rules)} for c in result.changes],
            "conflict": [{"kind": c.kind, "text": c.text} for c in result.conflict],
            "unmovable": [f.as_dict() for f in result.unmovable],
            "still_failing": [f.as_dict() for f in result.findings if f.status == "error"],
            "simulation_losses": lost, "diff": patch}, indent=2, ensure_ascii=False))
    else:
        _print_text(result, lost, patch, name)
    if args.write and fixed and result.changes:
        write_atomically(target, new_text)
        if args.format == "text":
            print(f"lockstep fix: wrote {len(result.changes)} change(s) to {name}")
    return 0 if fixed else 1


def _simulation_losses(result) -> list[str]:  # type: ignore[no-untyped-def]
    from lockstep.timing.config import stack_from_config
    from lockstep.timing.simulate import simulate_stack

    report = simulate_stack(stack_from_config(result.values), jobs=os.cpu_count() or 1)
    return [f"{s.service} {s.scenario}: harmful in {s.harmful_phases}/{s.phases} phases"
            for s in report.scenarios if s.harmful]


def _print_text(result, lost: list[str], patch: str, name: str) -> None:  # type: ignore[no-untyped-def]
    if result.conflict:
        print(f"lockstep fix {name}: no numbers within the fields' ranges satisfy these together:")
        for c in result.conflict:
            print(f"  {c.text}")
        print("drop a --keep, or accept one of these rules in the service's `accept` list")
        return
    for c in result.changes:
        print(f"{c.knob.name}: {c.knob.value} → {c.new}  ({', '.join(c.rules) or 'kept consistent'})")
    if patch:
        print(patch, end="")
    for f in result.unmovable:
        print(f"not a number to move: {f.render()}")
    for f in result.findings:
        if f.status == "error" and f not in result.unmovable:
            print(f"still failing: {f.render()}")
    for line in lost:
        print(f"the simulation still loses requests: {line}")
    if result.ok and not lost:
        verdict = f"{len(result.changes)} change(s); check passes and the simulation loses nothing" \
            if result.changes else "nothing to fix"
    else:
        verdict = "no consistent stack found"
    print(f"lockstep fix {name}: {verdict}")
