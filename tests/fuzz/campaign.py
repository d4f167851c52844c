"""The long fuzz campaign behind `bench/fuzz`: many seeded cases over every core, in-process.

    bench/fuzz [--cases 100000] [--jobs N] [--timeout 10] [--seed 0]

Each case is `tests.fuzz.mutations.any_case(random.Random(seed + i))`, run through
`timing.cli.main` with its streams captured. Counted: tracebacks (an exception escaping
`main`), hangs (a case still running after `--timeout` seconds), exits outside 0/1/2, and
exit-2 messages that break the one-line-per-problem rule (`tests.fuzz.support.clean_problem`). Prints each count beside its target (0) and
the first few failing cases (reproduce one with `--only-seed`).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field

from tests.fuzz import mutations as m

SHOWN = 5


class Hang(BaseException):
    """Raised by the alarm in a case that runs too long (not an Exception: `main` never eats it)."""


@dataclass
class Result:
    seed: int
    what: str
    kind: str  # "ok", "traceback", "hang", "bad-exit", "not-one-line"
    detail: str = ""


@dataclass
class Tally:
    cases: int = 0
    tracebacks: int = 0
    hangs: int = 0
    bad_exits: int = 0
    not_one_line: int = 0
    known: int = 0
    examples: list[Result] = field(default_factory=list)

    def add(self, r: Result) -> None:
        self.cases += 1
        if r.kind == "ok":
            return
        attr = {"traceback": "tracebacks", "hang": "hangs", "bad-exit": "bad_exits",
                "known": "known"}.get(r.kind, "not_one_line")
        setattr(self, attr, getattr(self, attr) + 1)
        if len(self.examples) < SHOWN:
            self.examples.append(r)


def _alarm(signum, frame):  # noqa: ANN001 - signal handler signature
    raise Hang


def run_one(rnd: random.Random, seed: int, timeout: float = 0.0) -> Result:
    from tests.fuzz.support import clean_problem, cli

    case = m.any_case(rnd)
    what = f"{' '.join(a[:30] for a in case.argv)} <- {case.what}"
    if timeout:
        signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        run = cli(list(case.argv), case.stdin)
    except Hang:
        return Result(seed, what, "hang", f"still running after {timeout}s")
    except Exception:  # noqa: BLE001 - this is what the campaign counts
        return Result(seed, what, "traceback", traceback.format_exc(limit=-3))
    finally:
        if timeout:
            signal.setitimer(signal.ITIMER_REAL, 0)
    if run.code not in (0, 1, 2):
        return Result(seed, what, "bad-exit", f"exit {run.code}: {run.err[:300]}")
    problem = clean_problem(run, case.command)
    if problem is not None:
        return Result(seed, what, "not-one-line", problem)
    return Result(seed, what, "ok")


def _work(args: tuple[int, int, float]) -> Tally:
    start, stop, timeout = args
    tally = Tally()
    for seed in range(start, stop):
        tally.add(run_one(random.Random(seed), seed, timeout))
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds before a case counts as a hang")
    parser.add_argument("--seed", type=int, default=0, help="first case's seed")
    parser.add_argument("--only-seed", type=int, default=None, help="run one case and print what it was")
    args = parser.parse_args(argv)
    if args.only_seed is not None:
        r = run_one(random.Random(args.only_seed), args.only_seed, args.timeout)
        print(f"seed {r.seed}: {r.kind}: {r.what}\n{r.detail}")
        return 0 if r.kind == "ok" else 1
    chunk = 500
    ranges = [(s, min(s + chunk, args.seed + args.cases), args.timeout)
              for s in range(args.seed, args.seed + args.cases, chunk)]
    total = Tally()
    begin = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
        for part in pool.imap_unordered(_work, ranges):
            total.cases += part.cases
            total.tracebacks += part.tracebacks
            total.hangs += part.hangs
            total.bad_exits += part.bad_exits
            total.not_one_line += part.not_one_line
            total.known += part.known
            total.examples.extend(part.examples[:SHOWN - len(total.examples)])
            if total.cases % 10_000 < chunk:
                print(f"  … {total.cases:,} cases, {time.perf_counter() - begin:.0f}s", file=sys.stderr, flush=True)
    wall = time.perf_counter() - begin
    print(f"bench/fuzz: {total.cases:,} cases (seeds {args.seed}..{args.seed + args.cases - 1}) in {wall:.0f}s "
          f"on {args.jobs} processes, {total.cases / wall:.0f} cases/s")
    for label, count in (("tracebacks", total.tracebacks), ("hangs (>%gs)" % args.timeout, total.hangs),
                         ("exits outside 0/1/2", total.bad_exits), ("exit-2 lines not one per problem", total.not_one_line),
                         ("known defects (support.py)", total.known)):
        print(f"  {label:<30} {count:>6}   (target 0)")
    for r in total.examples:
        print(f"--- seed {r.seed} {r.kind}: {r.what}\n{r.detail.rstrip()}")
    failed = total.tracebacks + total.hangs + total.bad_exits + total.not_one_line + total.known
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
