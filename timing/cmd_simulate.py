"""`lockstep simulate [STACK_CONFIG]`: a rollout, one pod replaced, a crash, quiet hours and
an ingress proxy's reload per service, over many random phases of the health checks, probes,
observers and requests through each hop of the path."""

from __future__ import annotations

import argparse
import json

from lockstep.timing.cmd_check import add_stack_argument
from lockstep.timing.config import ConfigError
from lockstep.timing.textio import cut

EPILOG = """\
counts: 502 = sent to a target that no longer listens; no-target = the LB had nowhere to send;
ka-502 = sent on a keep-alive connection the next hop had closed; 504 = a hop in front gave up
waiting for the answer; cut = in flight when the pod, the LB or a reloading proxy ended it;
drain-503 = health checks a draining server failed on purpose (not a failure). A harmful row
says where on the path the losses happened ("at: ...").
Requests lost during a real crash are unavoidable and not counted.
exit codes: 0 nothing lost and no false block, 1 requests lost / false heartbeat block /
watchdog action / kubelet restart during planned work / failed deploy, 2 unreadable or invalid input"""

COLUMNS = (("requests", "requests"), ("502", "refused_502"), ("no-target", "no_target_503"),
           ("ka-502", "keepalive_502"), ("504", "timeout_504"), ("cut", "cut"), ("drain-503", "deliberate_503"),
           ("false-block", "false_blocks"), ("watchdog", "watchdog_actions"),
           ("early-unblock", "premature_unblocks"), ("restart", "restarts"), ("deploy-fail", "deploy_failed"),
           ("no-pod", "zero_capacity"))
TIMELINE_LINES = 14


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_stack_argument(parser)
    parser.add_argument("--phases", type=int, default=20, help="random phases per scenario (default 20; bounded, see README)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--rate", type=float, default=None,
                        help="client requests per second per service (default 20)")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    add_scenario_argument(parser)


def add_scenario_argument(parser: argparse.ArgumentParser) -> None:
    """`--scenario NAME` (repeatable, or `all`), shared by `simulate` and `mutate`."""
    from lockstep.timing.scenario_names import DEFAULT_SCENARIOS, NODE_SCENARIOS

    parser.add_argument("--scenario", action="append", default=None, metavar="NAME",
                        help=f"run only these scenarios (repeatable; default {', '.join(DEFAULT_SCENARIOS)}; "
                        f"the node scenarios: {', '.join(NODE_SCENARIOS)}; all: every one)")


def chosen_scenarios(args: argparse.Namespace) -> tuple[str, ...]:
    """The scenarios `--scenario` names (`all`: every one), or the default set; an unknown name
    is one input error naming the choices."""
    from lockstep.timing.scenario_names import DEFAULT_SCENARIOS
    from lockstep.timing.simulate import SCENARIOS

    names = args.scenario or DEFAULT_SCENARIOS
    unknown = [n for n in names if n not in SCENARIOS and n != "all"]
    if unknown:  # a misspelt name is an error even beside `all`
        raise ConfigError([f"--scenario: {cut(unknown[0])} is not one of {', '.join(SCENARIOS)}, all"])
    if "all" in names:
        return tuple(SCENARIOS)
    return tuple(dict.fromkeys(names))


def check_bounds(phases: int, rate: float) -> None:
    """`--phases` and `--rate` within `timing.simulate`'s bounds, or one line naming the option."""
    from lockstep.timing.simulate import MAX_PHASES, MAX_RATE

    if not 1 <= phases <= MAX_PHASES:
        raise ConfigError([f"--phases: must be 1–{MAX_PHASES} (got {cut(phases)})"])
    if not 0 < rate <= MAX_RATE:
        raise ConfigError([f"--rate: must be above 0 and at most {MAX_RATE:g} requests/s (got {cut(rate)})"])


def _check_args(args: argparse.Namespace) -> float:
    from lockstep.timing.simulate import DEFAULT_RATE

    rate = DEFAULT_RATE if args.rate is None else args.rate
    check_bounds(args.phases, rate)
    return rate


def _metrics(metrics: dict[str, float]) -> str:
    shown = []
    for key, value in metrics.items():
        shown.append(f"{key}={'never' if value == float('inf') else f'{value:.0f}s'}")
    return " ".join(shown)


def render_text(report, source: str) -> str:
    lines = [f"lockstep simulate {source}: {report.phases} phases per scenario, seed {report.seed}, "
             f"{report.rate:g} requests/s per service"]
    # the first two columns as wide as their longest entry (a node scenario's name is longer
    # than the default ones'), never narrower than before
    name_w = max([17, *(len(s.service) for s in report.scenarios)]) + 1
    scen_w = max([8, *(len(s.scenario) for s in report.scenarios)]) + 1
    indent = " " * (name_w + scen_w)
    header = f"{'service':<{name_w}}{'scenario':<{scen_w}}" + "".join(
        f"{h:>{max(len(h) + 1, 6)}}" for h, _ in COLUMNS)
    lines.append(header)
    for s in report.scenarios:
        c = s.counts
        row = f"{s.service:<{name_w}}{s.scenario:<{scen_w}}" + "".join(
            f"{getattr(c, k):>{max(len(h) + 1, 6)}}" for h, k in COLUMNS)
        lines.append(row + ("  HARMFUL" if s.harmful else ""))
        extra = _metrics(s.metrics)
        if extra:
            lines.append(f"{indent}{extra}")
        if c.by_hop:
            lines.append(f"{indent}at: " + ", ".join(f"{what} ×{n}" for what, n in sorted(c.by_hop.items())))
        for note in c.notes[:2]:
            lines.append(f"{indent}note: {note}")
        if len(c.notes) > 2:
            lines.append(f"{indent}note: … {len(c.notes) - 2} more like these (one per phase)")
    for s in report.scenarios:
        if not s.timeline or not (s.harmful or s.scenario == "rollout"):
            continue
        what = "witness" if s.harmful else "timeline"
        lines.append(f"{what}: {s.service} {s.scenario}")
        events = s.timeline
        if s.harmful:
            first = next((i for i, (_, text) in enumerate(events)
                          if "first loss" in text or "BLOCKED" in text or "watchdog" in text
                          or "deadline" in text or "no pod" in text or "stalled" in text), 0)
            events = events[max(0, first - TIMELINE_LINES + 4):]
        for t, text in events[:TIMELINE_LINES]:
            lines.append(f"  {t:8.1f}s  {text}")
        if len(events) > TIMELINE_LINES:
            lines.append(f"  … {len(events) - TIMELINE_LINES} more events (--format json has all)")
    bad = [s for s in report.scenarios if s.harmful]
    if bad:
        lines.append("result: " + "; ".join(
            f"{s.service} {s.scenario} harmful in {s.harmful_phases}/{s.phases} phases" for s in bad))
    else:
        lines.append("result: no request lost, no false block, no false watchdog action")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from lockstep.timing.config import EXAMPLE, read_stack_file
    from lockstep.timing.simulate import simulate_stack

    rate = _check_args(args)
    scenarios = chosen_scenarios(args)
    stack = read_stack_file(args.stack_config)
    report = simulate_stack(stack, phases=args.phases, seed=args.seed, rate=rate, timeline=True,
                            scenarios=scenarios)
    source = args.stack_config or EXAMPLE.name
    if args.format == "json":
        print(json.dumps({"stack": source, **report.as_dict()}, indent=2, ensure_ascii=False))
    else:
        print(render_text(report, source))
    return 1 if report.failed else 0
