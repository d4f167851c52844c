"""Benchmark `lockstep audit` on one file of ~4,000 documents, beside Checkov and the floor.

    .venv/bin/python bench/bench_audit.py [--workloads 1000] [--no-checkov] [--readme]

Generates 1,000 workloads (Ingress, Service, Deployment, PodDisruptionBudget each: 4,000
documents in one multi-document YAML file) and measures, each as a whole process, wall time
and peak memory (the child's `ru_maxrss`):
- the floor: reading the file with `yaml.load_all` and PyYAML's C loader, nothing else;
- `lockstep audit FILE` (the text report; a JSON run, not timed, lists the rules broken);
- `checkov -f FILE --framework kubernetes` (installed into a throwaway venv under /tmp when
  absent: it is not a project dependency).
Prints one summary line (and, with --readme, appends it under `<!-- section:bench -->`).
Targets (issue 11): audit within 1.5x the floor's wall time and 3x its peak memory (medians of
`--runs` runs each, floor and audit interleaved so that load on a shared machine hits both
alike), at least 10x faster than Checkov, with findings (timing relations between objects)
that Checkov's per-object checks do not make.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIME_TARGET, MEMORY_TARGET = 1.5, 3.0  # audit / floor, wall and peak memory (issue 11)
CHECKOV_VENV = Path(tempfile.gettempdir()) / "lockstep-bench-checkov"
# Runs one command and reports its wall time and peak RSS: RUSAGE_CHILDREN of this small
# wrapper covers exactly that one child.
WRAPPER = """
import json, resource, subprocess, sys, time
t = time.perf_counter()
p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
wall = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"wall": wall, "peak_kb": peak, "code": p.returncode,
                  "out": p.stdout.decode(errors="replace"), "err": p.stderr.decode(errors="replace")[-2000:]}))
"""
WORKLOAD = """\
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: app-{i}
  namespace: team-{ns}
  annotations:
    alb.ingress.kubernetes.io/target-type: {target}
    alb.ingress.kubernetes.io/healthcheck-path: /healthz
    alb.ingress.kubernetes.io/healthcheck-interval-seconds: "{interval}"
    alb.ingress.kubernetes.io/target-group-attributes: deregistration_delay.timeout_seconds={dereg}
spec:
  ingressClassName: alb
  rules:
    - host: app-{i}.example.com
      http:
        paths:
          - path: /
            pathType: Prefix
            backend:
              service:
                name: app-{i}
                port:
                  number: 80
---
apiVersion: v1
kind: Service
metadata:
  name: app-{i}
  namespace: team-{ns}
spec:
  type: NodePort
  selector:
    app.kubernetes.io/name: app-{i}
  ports:
    - port: 80
      targetPort: 8080
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-{i}
  namespace: team-{ns}
  labels:
    app.kubernetes.io/name: app-{i}
  annotations:
    lockstep.dev/warmup-seconds: "{warmup}"
    lockstep.dev/max-request-seconds: "30"
    lockstep.dev/finish-seconds: "{finish}"
spec:
  replicas: {replicas}
  minReadySeconds: {min_ready}
  selector:
    matchLabels:
      app.kubernetes.io/name: app-{i}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: app-{i}
    spec:
      terminationGracePeriodSeconds: {grace}
      containers:
        - name: app
          image: ghcr.io/example/app-{i}:1.0.{i}
          ports:
            - containerPort: 8080
          resources:
            requests: {{cpu: 100m, memory: 128Mi}}
            limits: {{memory: 256Mi}}
          readinessProbe:
            httpGet: {{path: /healthz, port: 8080}}
            periodSeconds: 5
          livenessProbe:
            httpGet: {{path: /healthz, port: 8080}}
            periodSeconds: 10
          lifecycle:
            preStop:
              sleep:
                seconds: {drain}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: app-{i}
  namespace: team-{ns}
spec:
  minAvailable: {min_available}
  selector:
    matchLabels:
      app.kubernetes.io/name: app-{i}
"""


def generate(path: Path, workloads: int) -> None:
    """Realistic variety: a third of the services are well tuned, the rest break one or more
    timing relations in the ways the seeds describe."""
    parts = []
    for i in range(workloads):
        parts.append(WORKLOAD.format(
            i=i, ns=i % 25, target=("ip", "instance")[i % 2], interval=(5, 10, 15)[i % 3],
            dereg=(60, 30, 300)[i % 3], warmup=(5, 30, 90)[i % 3], finish=(30, 10, 40)[i % 3],
            replicas=(3, 2, 1)[i % 3], min_ready=(30, 0, 0)[i % 3], grace=(60, 30, 30)[i % 3],
            drain=(20, 5, 15)[i % 3], min_available=(1, '"50%"', 1)[i % 3]))
    path.write_text("---\n".join(parts))


# The children compile lockstep's modules once (the warm-up run) and reuse the bytecode, as an
# installed package does (pip writes it at install time): with PYTHONDONTWRITEBYTECODE set, as
# in some development shells, every run compiled ~60 modules again (~0.07 s of each audit).
# The bytecode goes under the bench's own temporary directory, never into the source tree (with
# a prefix Python reads every module's bytecode there: both warm-up runs write it).
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def measure_once(cmd: list[str]) -> dict:
    out = subprocess.run([sys.executable, "-c", WRAPPER, *cmd], capture_output=True, text=True, check=True,
                         env=CHILD_ENV)
    return json.loads(out.stdout)


def measure(cmd: list[str], runs: int = 1) -> dict:
    """The median of `runs` (wall), with the median peak memory."""
    return median_of([measure_once(cmd) for _ in range(runs)])


def median_of(results: list[dict]) -> dict:
    out = dict(sorted(results, key=lambda r: r["wall"])[len(results) // 2])
    out["wall"] = statistics.median(r["wall"] for r in results)
    out["peak_kb"] = statistics.median(r["peak_kb"] for r in results)
    out["runs"] = len(results)
    return out


def checkov_bin() -> Path | None:
    binary = CHECKOV_VENV / "bin" / "checkov"
    if binary.exists():
        return binary
    print(f"installing checkov into {CHECKOV_VENV} (throwaway, not a project dependency)...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(CHECKOV_VENV)], check=True)
    pip = [str(CHECKOV_VENV / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    done = subprocess.run([*pip, "checkov"], capture_output=True, text=True)
    if done.returncode != 0 or not binary.exists():
        print(f"checkov could not be installed: {done.stderr[-500:]}", file=sys.stderr)
        return None
    return binary


def checkov_failures(out: str) -> set[str]:
    try:
        data = json.loads(out)
    except json.JSONDecodeError:
        return set()
    reports = data if isinstance(data, list) else [data]
    return {c["check_id"] for r in reports for c in r.get("results", {}).get("failed_checks", [])}


def mb(kb: int) -> str:
    return f"{kb / 1024:.0f} MB" if kb < 1024 * 1024 else f"{kb / 1024 / 1024:.2f} GB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5, help="repetitions of the floor and the audit (median)")
    parser.add_argument("--no-checkov", action="store_true")
    parser.add_argument("--readme", action="store_true", help="append the summary line to README.md")
    args = parser.parse_args()

    load = os.getloadavg()[0]  # other work on the machine skews every number alike
    work = Path(tempfile.mkdtemp(prefix="lockstep-bench-"))
    bundle = work / "bundle.yaml"
    CHILD_ENV["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    generate(bundle, args.workloads)
    docs = 4 * args.workloads
    print(f"{bundle}: {docs} documents, {bundle.stat().st_size / 1e6:.1f} MB", flush=True)

    floor_cmd = [sys.executable, "-c", "import sys, yaml; list(yaml.load_all(open(sys.argv[1]), "
                 "Loader=yaml.CSafeLoader))", str(bundle)]
    audit_cmd = [sys.executable, "-m", "lockstep", "audit", str(bundle), "--kubernetes-version", "1.30"]
    measure_once(floor_cmd), measure_once(audit_cmd)  # warm the page cache and the bytecode
    pairs = [(measure_once(floor_cmd), measure_once(audit_cmd)) for _ in range(args.runs)]
    floor = median_of([f for f, _ in pairs])
    audit = median_of([a for _, a in pairs])  # the default text report, as a person runs it
    report = json.loads(subprocess.run([*audit_cmd, "--format", "json"], capture_output=True, text=True,
                                       env=CHILD_ENV).stdout)
    broken = {f["id"] for s in report["subjects"] for f in s["findings"] if f["status"] in ("error", "warning")}
    errors = report["summary"]["error"]
    ratio, memory = audit["wall"] / floor["wall"], audit["peak_kb"] / floor["peak_kb"]
    verdict = "ok" if ratio <= TIME_TARGET and memory <= MEMORY_TARGET else "OVER TARGET"
    print(f"floor  (yaml.load_all, C loader): {floor['wall']:.2f} s, {mb(floor['peak_kb'])} (median of {args.runs})")
    print(f"lockstep audit: {audit['wall']:.2f} s, {mb(audit['peak_kb'])} (median of {args.runs}, exit {audit['code']}); "
          f"{errors} error findings over {len(broken)} rules: {', '.join(sorted(broken))}")
    print(f"audit / floor: time x{ratio:.2f} (target <= x{TIME_TARGET}), memory x{memory:.2f} "
          f"(target <= x{MEMORY_TARGET:.0f}): {verdict}")
    line = (f"audit of {docs} documents ({args.workloads} workloads × Ingress, Service, Deployment, PDB; "
            f"{os.cpu_count()} cores, load avg {load:.1f} at start): lockstep {audit['wall']:.2f} s / {mb(audit['peak_kb'])}, "
            f"floor (yaml C loader) {floor['wall']:.2f} s / {mb(floor['peak_kb'])} "
            f"(×{ratio:.2f} time, ×{memory:.2f} memory; targets ×{TIME_TARGET}, ×{MEMORY_TARGET:.0f})")
    if not args.no_checkov and (binary := checkov_bin()) is not None:
        checkov = measure([str(binary), "-f", str(bundle), "--framework", "kubernetes", "-o", "json",
                           "--quiet", "--compact", "--skip-download"])
        failed = checkov_failures(checkov["out"])
        print(f"checkov: {checkov['wall']:.2f} s, {mb(checkov['peak_kb'])} (exit {checkov['code']}); "
              f"failed checks: {', '.join(sorted(failed)) or 'none'}")
        line += (f", Checkov {checkov['wall']:.1f} s / {mb(checkov['peak_kb'])} "
                 f"(lockstep ×{checkov['wall'] / audit['wall']:.0f} faster); lockstep found {errors} "
                 f"timing errors over {len(broken)} rules, which no Checkov check ({len(failed)} failing "
                 "ids, each about one object) relates")
    print(line)
    if args.readme:
        readme = ROOT / "README.md"
        text = readme.read_text()
        marker = "<!-- section:bench -->"
        head, sep, tail = text.partition(marker)
        if not sep:
            print("README.md has no bench section", file=sys.stderr)
            return 1
        readme.write_text(f"{head}{sep}\n- {time.strftime('%Y-%m-%d')}: {line}{tail}")
    return 0 if verdict == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
