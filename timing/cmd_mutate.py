"""`lockstep mutate [STACK_CONFIG]`: push every number of the stack to wrong values and
report which rule catches each, judged by the simulation."""

from __future__ import annotations

import argparse
import json
from collections import Counter

from lockstep.timing.cmd_check import add_stack_argument
from lockstep.timing.cmd_simulate import add_scenario_argument, check_bounds, chosen_scenarios
from lockstep.timing.config import ConfigError
from lockstep.timing.textio import cut

EPILOG = """\
categories: caught = a rule rejects it and the simulation shows harm; gap = no rule rejects it
but the simulation shows harm (fails the run); strict = a rule rejects it, the simulation shows
no harm; harmless = accepted and harmless; outside = a number the simulation does not read;
rejected by the model = invalid input (out of range, API rule).
exit codes: 0 no gap, 1 some harmful mutation no rule catches, 2 unreadable or invalid input"""

LABELS = {"caught": "caught (rule rejects, simulation harmed)",
          "gap": "UNCAUGHT BUT HARMFUL (gap)",
          "strict": "rejected but harmless in simulation (strictness)",
          "harmless": "accepted and harmless",
          "outside": "outside the simulation (rules only)",
          "rejected_by_model": "rejected by the model (invalid input)"}
SAMPLES = 4


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_stack_argument(parser)
    parser.add_argument("--phases", type=int, default=2,
                        help="random phases per scenario and mutant (default 2; bounded, see README)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--rate", type=float, default=10.0,
                        help="client requests per second per service (default 10)")
    parser.add_argument("--only", metavar="PREFIX", default=None,
                        help="mutate only fields whose path starts with PREFIX (e.g. services.0.lb)")
    parser.add_argument("--jobs", type=int, default=None, metavar="N",
                        help="worker processes (default: the cores this process may use; "
                             "1: no workers); the report is the same for any N")
    add_scenario_argument(parser)
    parser.add_argument("--all", action="store_true", help="list every mutant (text)")
    parser.add_argument("--format", choices=("text", "json"), default="text")


def _check_args(args: argparse.Namespace) -> None:
    check_bounds(args.phases, args.rate)
    if args.jobs is not None and args.jobs < 1:
        raise ConfigError([f"--jobs: must be at least 1 (got {args.jobs})"])


def _row(v) -> str:
    m = v.mutant
    rules = ",".join(v.rules) or "-"
    tail = "; ".join(v.harm) if v.harm else (v.problem or ("not simulated" if not v.simulated else "no harm"))
    return f"  {m.where} {m.original} → {m.value} ({m.why}): rules {rules} | {tail}"


def render_text(report, source: str, show_all: bool) -> str:
    counts = report.counts
    total = len(report.verdicts)
    lines = [f"lockstep mutate {source}: {report.numbers} numbers, {total} mutants, "
             f"{report.phases} phases × {report.rate:g} requests/s per simulated mutant, "
             f"{report.wall_s:.1f}s wall, {report.cpu_s:.1f}s CPU ({report.jobs} processes)"]
    if report.baseline_harm or report.baseline_errors:
        lines.append("the unmutated stack is not clean: "
                     + "; ".join(report.baseline_errors + report.baseline_harm))
    for cat, label in LABELS.items():
        lines.append(f"  {counts[cat]:5d}  {label}")
    for cat in ("gap", "caught", "strict"):
        rows = report.by(cat)
        if not rows:
            continue
        lines.append(f"{LABELS[cat]}:")
        shown = rows if (show_all or cat == "gap") else _spread(rows)
        lines.extend(_row(v) for v in shown)
        if len(shown) < len(rows):
            lines.append(f"  … {len(rows) - len(shown)} more (--all)")
    if show_all:
        for cat in ("harmless", "outside", "rejected_by_model"):
            lines.append(f"{LABELS[cat]}:")
            lines.extend(_row(v) for v in report.by(cat))
    by_rule = Counter(r for v in report.by("caught") for r in v.rules)
    if by_rule:
        lines.append("rules catching harmful mutants: "
                     + ", ".join(f"{r} {n}" for r, n in by_rule.most_common()))
    lines.append("result: " + (f"{counts['gap']} harmful mutation(s) no rule catches"
                               if report.failed else "every harmful mutation is caught by a rule"))
    return "\n".join(lines)


def _spread(rows: list) -> list:
    """A few representative rows: one per distinct rule set first."""
    seen, out = set(), []
    for v in rows:
        if v.rules not in seen:
            seen.add(v.rules)
            out.append(v)
        if len(out) == SAMPLES:
            break
    return out


def run(args: argparse.Namespace) -> int:
    from lockstep.timing.config import EXAMPLE, read_stack_file
    from lockstep.timing.forked import default_jobs
    from lockstep.timing.mutate import mutate_stack

    _check_args(args)
    scenarios = chosen_scenarios(args)
    stack = read_stack_file(args.stack_config)
    jobs = args.jobs if args.jobs is not None else default_jobs()
    report = mutate_stack(stack, phases=args.phases, seed=args.seed, rate=args.rate, only=args.only,
                          jobs=jobs, scenarios=scenarios)
    if args.only is not None and report.numbers == 0:
        raise ConfigError([f"--only: no number of the stack has a path starting with {cut(args.only)}"])
    source = args.stack_config or EXAMPLE.name
    if args.format == "json":
        print(json.dumps({"stack": source, "numbers": report.numbers, "mutants": len(report.verdicts),
                          "wall_s": round(report.wall_s, 2), "cpu_s": round(report.cpu_s, 2), "jobs": report.jobs,
                          "phases": report.phases, "scenarios": list(scenarios),
                          "rate_per_s": report.rate, "counts": report.counts, "ok": not report.failed,
                          "baseline_errors": list(report.baseline_errors),
                          "baseline_harm": list(report.baseline_harm),
                          "mutants_detail": [v.as_dict() for v in report.verdicts]},
                         indent=2, ensure_ascii=False))
    else:
        print(render_text(report, source, args.all))
    return 1 if report.failed else 0
