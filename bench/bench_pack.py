"""Time of the policy pack's AnalyzeStack on the example's render and on 100 services.

Served as the engine calls it: gRPC to `python -m lockstep.policies`.

    .venv/bin/python bench/bench_pack.py [--runs N] [--tree DIR]

Renders each stack under Pulumi's mocks (as `lockstep render` does), sends the custom
resources as one AnalyzeStackRequest (what `pulumi preview --policy-pack` sends once per
preview) and prints the median and best of N requests per stack. `--tree DIR` serves the pack
from another checkout (a `git worktree` of another commit, say) to compare two versions on the
same renders. No target: issue 11 sets none for the pack; the figure is for comparing commits.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402
from google.protobuf import struct_pb2  # noqa: E402
from pulumi.runtime.proto import analyzer_pb2  # noqa: E402

from bench.bench_render import many_services  # noqa: E402


def struct(props: dict) -> struct_pb2.Struct:
    """Props as the engine sends them (a protobuf Struct: every number a float)."""
    out = struct_pb2.Struct()
    out.update(props)
    return out


def props_of(r) -> dict:
    """A recorded resource's props as the engine hands them to policies: its inputs, with the
    `arn` and `id` the provider returned."""
    return {**r.inputs, **({"arn": r.arn} if r.arn else {}), **({"id": r.id} if r.id else {})}


def stack_request(recorded: list) -> analyzer_pb2.AnalyzeStackRequest:
    """The AnalyzeStackRequest the engine sends for a render's custom resources."""
    return analyzer_pb2.AnalyzeStackRequest(resources=[
        analyzer_pb2.AnalyzerResource(type=r.type, properties=struct(props_of(r)), urn=r.urn, name=r.name,
                                      dependencies=list(r.depends_on)) for r in recorded if r.custom])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose pack is served")
    args = parser.parse_args()

    import grpc
    from pulumi.runtime.proto import analyzer_pb2_grpc

    from lockstep.infra.render import record
    from lockstep.timing.config import EXAMPLE, lockstep_values

    example = lockstep_values(yaml.safe_load(EXAMPLE.read_text())["config"])
    stacks = {"example": example, "100 services": lockstep_values(many_services(100)["config"])}
    requests = {name: stack_request(record(values)) for name, values in stacks.items()}
    server = subprocess.Popen([sys.executable, "-m", "lockstep.policies"], cwd=args.tree,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        port = server.stdout.readline().decode().strip()  # type: ignore[union-attr]
        if not port.isdigit():
            print(f"the pack in {args.tree} did not start", file=sys.stderr)
            return 1
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            analyzer = analyzer_pb2_grpc.AnalyzerStub(channel)
            for name, req in requests.items():
                analyzer.AnalyzeStack(req, timeout=600)  # the server's first request imports and warms
                times = []
                for _ in range(args.runs):
                    start = time.perf_counter()
                    analyzer.AnalyzeStack(req, timeout=600)
                    times.append(time.perf_counter() - start)
                print(f"AnalyzeStack, {name} ({len(req.resources)} resources): median "  # type: ignore[attr-defined]
                      f"{statistics.median(times):.3f} s, best {min(times):.3f} s over {args.runs} requests "
                      "(no target: issue 11 sets none)")
    finally:
        server.terminate()
        server.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
