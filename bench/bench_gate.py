"""Wall time of the mutation gate (`scripts/mutation-gate`), whole process, from nothing.

    .venv/bin/python bench/bench_gate.py [--runs 3]

Each run deletes mutmut's cache (the gate does so itself), generates every mutant of the
mutated part of timing/, runs the gate's test selection against each and reads the counts.
Prints each run's wall time and mutant count, then the median beside the target (< 300 s,
with the count of mutants kept and 0 survivors). One run takes about half an hour on two
cores before scripts/mutmut-run, about 6 minutes with it: the figure is measured here,
never asserted in a test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 300.0


def one_run() -> tuple[float, dict[str, int], int]:
    start = time.perf_counter()
    proc = subprocess.run([str(ROOT / "scripts" / "mutation-gate")], cwd=ROOT, capture_output=True, text=True,
                          check=False)
    wall = time.perf_counter() - start
    stats = json.loads((ROOT / "mutants" / "mutmut-cicd-stats.json").read_text(encoding="utf-8"))
    return wall, stats, proc.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    walls = []
    for i in range(args.runs):
        wall, stats, code = one_run()
        walls.append(wall)
        print(f"run {i + 1}: {wall:.0f} s, {stats['total']} mutants, {stats['killed']} killed, "
              f"{stats.get('survived', 0)} survived (gate exit {code})", flush=True)
    median = statistics.median(walls)
    print(f"mutation gate: median {median:.0f} s over {len(walls)} run(s)  (target < {TARGET_S:.0f} s)  "
          f"{'MET' if median < TARGET_S else 'NOT MET'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
