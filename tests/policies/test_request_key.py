"""The served pack keys its cached judgement by the engine's request (`findings.REQUEST`, set by
`findings.serve_requests` around pulumi-policy's AnalyzeStack): every stack policy of one request
after the first reuses the answer without converting the resources again, and a request with
other contents (the same URNs, another number) is judged anew. In-process, on a subclass of
pulumi-policy's servicer, so that the class the served pack patches stays as it is here."""

from __future__ import annotations

import pytest
from pulumi.runtime.proto import analyzer_pb2
from pulumi_policy import EnforcementLevel

from lockstep.policies import findings
from lockstep.policies.rules import all_policies
from tests.policies.support import compliant, edited
from tests.policies.test_served_pack import lines, stack_request, struct

servicer_module = pytest.importorskip("pulumi_policy.policy")
SERVICER = getattr(servicer_module, "_PolicyAnalyzerServicer", None)
# pulumi-policy's own AnalyzeStack and Analyze (a test that runs the pack's __main__ wraps them)
ANALYZE_STACK = getattr(getattr(SERVICER, "AnalyzeStack", None), "__wrapped__", getattr(SERVICER, "AnalyzeStack", None))
ANALYZE = getattr(getattr(SERVICER, "Analyze", None), "__wrapped__", getattr(SERVICER, "Analyze", None))
pytestmark = pytest.mark.skipif(SERVICER is None, reason="this pulumi-policy has no _PolicyAnalyzerServicer")

BROKEN = {"feed-pdb:spec:minAvailable": 2.0}  # of 2 replicas: no eviction allowed


def servicer(served: bool):
    cls = type("Servicer", (SERVICER,), {"AnalyzeStack": ANALYZE_STACK, "Analyze": ANALYZE})
    if served:
        assert findings.serve_requests(cls)
    return cls("lockstep", "0.0.1", all_policies(), EnforcementLevel.MANDATORY,
               None, None, None, None, None, None, None)


@pytest.fixture
def conversions(monkeypatch):
    """How many times the pack converted the engine's resources (`resources_of`)."""
    calls = []
    convert = findings.resources_of

    def counted(resources):
        calls.append(len(resources))
        return convert(resources)

    monkeypatch.setattr(findings, "resources_of", counted)
    monkeypatch.setattr(findings, "_last", None)
    return calls


@pytest.mark.parametrize("stack", [compliant(), edited(BROKEN)], ids=["compliant", "broken"])
def test_served_a_request_is_converted_once_with_the_answers_of_converting_for_every_policy(conversions, stack):
    request = stack_request(stack)
    plain = lines(servicer(False).AnalyzeStack(request, None))
    by_resources = len(conversions)
    assert by_resources >= 3  # every stack policy converted them to look up the cached answer
    conversions.clear()
    findings._last = None
    assert lines(servicer(True).AnalyzeStack(request, None)) == plain
    assert len(conversions) == 1  # the first stack policy's; the others found its answer by request
    assert findings.REQUEST.get() is None  # (set only while the servicer answers)


def test_served_a_request_with_other_contents_is_judged_anew_and_equal_contents_are_not(conversions):
    served = servicer(True)
    good = lines(served.AnalyzeStack(stack_request(compliant()), None))
    bad = lines(served.AnalyzeStack(stack_request(edited(BROKEN)), None))  # the same URNs
    assert good == [] and any(policy == "pdb-allows-eviction" for policy, *_ in bad), bad
    assert len(conversions) == 2
    again = lines(served.AnalyzeStack(stack_request(edited(BROKEN)), None))  # a new, equal message
    assert again == bad and len(conversions) == 2


def test_serving_twice_wraps_once_and_a_class_without_analyze_stack_is_left_alone():
    cls = type("Servicer", (SERVICER,), {"AnalyzeStack": ANALYZE_STACK})
    assert findings.serve_requests(cls) and findings.serve_requests(cls)
    assert cls.AnalyzeStack.__wrapped__ is ANALYZE_STACK

    class Other:
        pass

    assert findings.serve_requests(Other) is False and not hasattr(Other, "AnalyzeStack")


@pytest.fixture
def printed(monkeypatch):
    """Each call of protobuf's own MessageToDict behind the served pack's `ConvertOnce`."""
    servicer(True)  # (puts ConvertOnce in place of the json_format pulumi-policy reads)
    shim = servicer_module.json_format
    assert isinstance(shim, findings.ConvertOnce)
    calls = []
    ordinary = shim.json_format

    class Counting:
        def MessageToDict(self, message, *args, **kwargs):  # noqa: N802
            calls.append(message.SerializeToString(deterministic=True))
            return ordinary.MessageToDict(message, *args, **kwargs)

    monkeypatch.setattr(shim, "json_format", Counting())
    return calls


@pytest.mark.parametrize("stack", [compliant(), edited(BROKEN)], ids=["compliant", "broken"])
def test_served_each_resources_properties_are_printed_once_per_request_with_the_same_answers(printed, stack):
    """pulumi-policy converts every resource for each stack policy (and each resource for each
    resource policy); served, each is converted once per request, and the answers are those of
    converting every time (the unwrapped servicer, for which the shim passes every call on)."""
    findings._last = None
    request = stack_request(stack)
    plain = lines(servicer(False).AnalyzeStack(request, None))
    policies = len(printed) // len(request.resources)
    assert policies >= 3 and len(printed) == policies * len(request.resources)
    printed.clear()
    findings._last = None
    assert lines(servicer(True).AnalyzeStack(request, None)) == plain
    assert sorted(printed) == sorted({r.properties.SerializeToString(deterministic=True) for r in request.resources})
    assert findings.CONVERTED.get() is None  # (set only while the servicer answers)

    typ, props, _ = stack["api-tg"]
    one = analyzer_pb2.AnalyzeRequest(type=typ, properties=struct(props), urn="urn:api-tg", name="api-tg")
    printed.clear()
    plain = lines(servicer(False).Analyze(one, None))
    assert len(printed) >= 2  # once per resource policy
    printed.clear()
    judged = []
    link = findings.link.link
    findings.link.link = lambda *a: judged.append(a) or link(*a)
    try:
        assert lines(servicer(True).Analyze(one, None)) == plain and len(printed) == 1
    finally:
        findings.link.link = link
    assert len(judged) == 1  # linked and judged by the first resource policy, read by the others


def test_outside_a_request_or_with_options_the_shim_is_message_to_dict(printed):
    message = struct({"a": [1.0, "x", {"b": None}], "c": 2.5})
    assert findings.CONVERTED.get() is None
    shim = servicer_module.json_format
    assert shim.MessageToDict(message) == {"a": [1, "x", {"b": None}], "c": 2.5} and len(printed) == 1
    token = findings.CONVERTED.set({})
    try:
        first, second = shim.MessageToDict(message), shim.MessageToDict(message)
        assert first == second and first is not second and len(printed) == 2  # a new structure, one print
        shim.MessageToDict(message, preserving_proto_field_name=True)
        assert len(printed) == 3
    finally:
        findings.CONVERTED.reset(token)
