"""The pack as the Pulumi engine meets it: `python -m policies` starts pulumi-policy's
analyzer server (the real `PolicyPack`), and the engine's gRPC calls — policy list, one
resource, the whole stack — come back with the exact lines. No Pulumi CLI is needed: the
requests are what the engine sends (protobuf Structs, so numbers arrive as floats)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from lockstep.policies.rules import all_policies

from tests.policies.support import compliant, edited, urn

ROOT = Path(__file__).resolve().parents[2]
LEVELS = {"advisory": 0, "mandatory": 1}  # pulumirpc.EnforcementLevel


def struct(props: dict) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    out.update(props)
    return out


def stack_request(stack: dict) -> analyzer_pb2.AnalyzeStackRequest:
    return analyzer_pb2.AnalyzeStackRequest(resources=[
        analyzer_pb2.AnalyzerResource(type=typ, properties=struct(props), urn=urn(typ, name), name=name,
                                      dependencies=[urn(stack[d][0], d) for d in deps])
        for name, (typ, props, deps) in stack.items()])


def lines(response: analyzer_pb2.AnalyzeResponse) -> list[tuple[str, str, str, int]]:
    return [(d.policyName, d.message, d.urn, d.enforcementLevel) for d in response.diagnostics]


def test_the_served_pack_lists_every_policy_with_its_enforcement(analyzer):
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty(), timeout=30)
    assert info.name == "lockstep"
    assert [p.name for p in info.policies] == [p.name for p in all_policies()]
    assert [p.enforcementLevel for p in info.policies] == [LEVELS[p.enforcement_level.value] for p in all_policies()]


def test_the_served_pack_passes_the_compliant_stack(analyzer):
    assert lines(analyzer.AnalyzeStack(stack_request(compliant()), timeout=30)) == []


def test_the_served_pack_reports_a_broken_pdb_against_the_workload(analyzer):
    """The engine shows the policy's description above the finding's line."""
    response = analyzer.AnalyzeStack(stack_request(edited({"feed-pdb:spec:minAvailable": 2.0})), timeout=30)
    assert lines(response) == [(
        "pdb-allows-eviction",
        "lockstep timing invariant pdb-allows-eviction, error case (docs/INVARIANTS.md)\n"
        "ERROR pdb-allows-eviction  feed: allowed disruptions 0 (pdb.min_available 2 of 2 replicas) < minimum 1  "
        "slack -1 → lower pdb.min_available below replicas (or accept it for a singleton)",
        urn("kubernetes:apps/v1:Deployment", "feed-deployment"), LEVELS["mandatory"])]


def test_the_served_pack_judges_one_target_group(analyzer):
    typ, props, _ = edited({"api-tg:healthCheck:interval": 301.0})["api-tg"]
    request = analyzer_pb2.AnalyzeRequest(type=typ, properties=struct(props), urn=urn(typ, "api-tg"), name="api-tg")
    assert [(d.policyName, d.message) for d in analyzer.Analyze(request, timeout=30).diagnostics] == [(
        "lb-values-in-range",
        "lockstep timing invariant lb-values-in-range, error case (docs/INVARIANTS.md)\n"
        "ERROR lb-values-in-range  api-tg: interval 301s (lb.health_check.interval_s) not in API range 5–300s  "
        "slack -1s → set lb.health_check.interval_s within 5–300")]
