"""Wall time of the README's test command, `./scripts/test`, on a fresh clone, whole process.

    python3 bench/bench_test.py [--runs 3] [--keep]

Each run clones the repository's committed HEAD into a new temporary directory (no `.venv`, no
`mutants/`, no `.cache/`), then times `./scripts/test` there as `.ci/run` calls it
(LOCKSTEP_REQUIRE_BROKER=1, LOCKSTEP_REQUIRE_BROWSER=1): creating the virtualenv and installing
the project with its test extras from the package index, the system packages when missing
(RabbitMQ, Chromium, the npm Mermaid package), the suite over the cores, the real-broker tests
and the mutation gate. Prints each run's wall time and the phases its output shows, then the
median beside the target (< 6 min, issue 11). Needs only python3 and git; about ten minutes a
run on two cores.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 360.0
PHASES = {  # what the output says, to show where a run's time went
    "suite": re.compile(r"^\d+ passed.* in ([\d.]+)s", re.M),
    "gate": re.compile(r"^mutation gate: \d+ mutants.*\((\d+)s wall\)", re.M),
}


def one_run(keep: bool) -> tuple[float, int, dict[str, str]]:
    work = Path(tempfile.mkdtemp(prefix="lockstep-bench-test-"))
    try:
        clone = work / "lockstep"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        env = {**os.environ, "LOCKSTEP_REQUIRE_BROKER": "1", "LOCKSTEP_REQUIRE_BROWSER": "1"}
        start = time.perf_counter()
        proc = subprocess.run(["./scripts/test"], cwd=clone, env=env, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - start
        out = proc.stdout + proc.stderr
        phases = {name: m.group(1) for name, rx in PHASES.items() if (m := rx.search(out))}
        if proc.returncode != 0:  # what failed: pytest's summary lines and the gate's verdict
            lines = [line for line in out.splitlines()
                     if line.startswith(("FAILED", "ERROR", "mutation gate", "E ")) or " failed" in line]
            print("\n".join(lines[-60:]) or out[-3000:], file=sys.stderr)
        return wall, proc.returncode, phases
    finally:
        if keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep each run's clone")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at start")
    walls = []
    for i in range(args.runs):
        wall, code, phases = one_run(args.keep)
        walls.append(wall)
        shown = ", ".join(f"{k} {v} s" for k, v in phases.items())
        print(f"run {i + 1}: {wall:.0f} s wall, exit {code} ({shown})", flush=True)
    median = statistics.median(walls)
    print(f"./scripts/test on a fresh clone: median {median:.0f} s over {len(walls)} run(s) "
          f"(target < {TARGET_S:.0f} s) {'MET' if median < TARGET_S else 'NOT MET'}")
    print(f"load average {os.getloadavg()[0]:.1f} at end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
