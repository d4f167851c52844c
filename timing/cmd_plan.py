"""`lockstep plan [STACK_CONFIG]`: the timelines of a drain, a rollout, a failure and a
failover per service, as text, JSON, or a Mermaid gantt chart for pull-request comments."""

from __future__ import annotations

import argparse
import json

from lockstep.timing.cmd_check import add_stack_argument, summary

EPILOG = ("exit codes as `check`: 0 ok, 1 error findings (the plan is still printed), "
          "2 unreadable or invalid input")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_stack_argument(parser)
    parser.add_argument("--format", choices=("text", "json", "mermaid"), default="text",
                        help="mermaid: a gantt chart that renders in a pull-request comment")


def run(args: argparse.Namespace) -> int:
    from lockstep.timing.config import read_stack_file
    from lockstep.timing.invariants import evaluate
    from lockstep.timing.timeline import derived_times, render_mermaid, render_text, stack_timelines

    stack = read_stack_file(args.stack_config)
    findings = evaluate(stack)
    errors = [f for f in findings if f.status == "error"]
    timelines = stack_timelines(stack)
    if args.format == "json":
        print(json.dumps({
            "derived": derived_times(stack),
            "timelines": [{"title": t.title, "spans": [
                {"start_s": s.start_s, "end_s": s.end_s, "label": s.label, "source": s.source}
                for s in t.spans]} for t in timelines],
            "errors": [f.as_dict() for f in errors]}, indent=2, ensure_ascii=False))
    elif args.format == "mermaid":
        print("```mermaid")
        print(render_mermaid(timelines))
        print("```")
    else:
        for name, times in derived_times(stack).items():
            print(f"{name}: " + ", ".join(f"{k} {v}s" for k, v in times.items()))
        for tl in timelines:
            print()
            print(render_text(tl))
        print()
        for f in errors:
            print(f.render())
        print(f"lockstep plan: {summary(findings)}")
    return 1 if errors else 0
