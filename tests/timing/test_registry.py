"""The registry of rules and the one walk over it: every catalogue id, every finding at once,
acknowledged breaks reported as accepted."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given

from tests.timing.strategies import build, varied_stacks
from timing.findings import Finding, Term
from timing.invariants import (RULE_IDS, RULES, Ctx, InvariantErrors, apply_accepts, context, errors, evaluate,
                               parse_version, raise_errors)

CATALOGUE = Path(__file__).resolve().parents[2] / "docs" / "INVARIANTS.md"


def test_the_registry_holds_the_34_rule_ids_of_the_catalogue() -> None:
    assert len(RULE_IDS) == 34 == len(set(RULE_IDS))
    if CATALOGUE.exists():
        documented = set(re.findall(r"^\| `([a-z0-9-]+)` \| (?:error|warning)", CATALOGUE.read_text(), re.M))
        assert documented == set(RULE_IDS)


def test_every_rule_is_judged_on_the_example() -> None:
    judged = {f.id for f in evaluate(build())}
    # the example uses the native sleep action, no mesh sidecar, and no health-check-only drain
    assert judged == set(RULE_IDS) - {"prestop-uses-native-sleep", "sidecar-outlives-app",
                                      "health-check-drain-needs-peers"}


def test_the_context_carries_the_margin_and_the_cluster_version() -> None:
    ctx = context(build({"margin_s": 7, "kubernetes_version": "1.29"}))
    assert ctx == Ctx(7, (1, 29))
    assert ctx.version_text == "1.29"
    assert parse_version("1.30") == (1, 30)
    assert parse_version("1.9") < parse_version("1.10")


def f(status: str, rule: str = "r-x", subject: str = "svc", service: str = "") -> Finding:
    return Finding(rule, "error", status, subject, Term("a", 1, "a"), ">=", Term("b", 2, "b"), 0, -1, "fix",
                   service=service)


def test_only_failed_findings_of_the_accepting_service_and_rule_are_accepted() -> None:
    accepts = {"svc": {"r-x": "on purpose"}}
    out = apply_accepts([f("error"), f("warning"), f("ok"), f("skipped"), f("error", rule="r-y"),
                         f("error", subject="other"), f("error", subject="spec (svc)", service="svc")], accepts)
    assert [x.status for x in out] == ["accepted", "accepted", "ok", "skipped", "error", "error", "accepted"]
    assert out[0].reason == "on purpose"


def test_every_error_is_raised_at_once_and_warnings_never() -> None:
    stack = build({"services.0.shutdown.drain_s": 19, "services.2.shutdown.finish_s": 9,
                   "failover.failback_checks": 1})
    with pytest.raises(InvariantErrors) as err:
        raise_errors(stack)
    assert [x.id for x in err.value.findings] == ["drain-covers-lb-detection", "finish-covers-requests"]
    assert str(err.value) == "\n".join(x.render() for x in err.value.findings)
    assert errors(evaluate(stack)) == err.value.findings
    raise_errors(build({"failover.failback_checks": 1}))  # a warning alone raises nothing


def test_lb_scope_rules_run_only_for_services_with_a_target_group() -> None:
    subjects = {x.subject for x in evaluate(build()) if x.id == "lb-timeout-below-interval"}
    assert subjects == {"api"}
    scopes = {r.scope for r in RULES}
    assert scopes == {"lb", "service", "stack"}


SEVERITIES = {r.id: set(r.severity.split("|")) for r in RULES}


@given(varied_stacks())
def test_every_finding_has_its_rules_severity_and_a_well_formed_record(stack) -> None:
    margin = stack.margin_s
    for x in evaluate(stack):
        assert x.severity in SEVERITIES[x.id], x.render()
        assert x.status in ("ok", x.severity, "skipped", "accepted"), x.render()
        assert x.margin_s in (0, margin) and isinstance(x.margin_s, int), x.render()
        assert x.relation in ("==", ">=", ">", "<=", "<", "in"), x.render()
        assert isinstance(x.left.source, str) and isinstance(x.right.source, str), x.render()
        assert isinstance(x.fix, str) and (x.fix != "" or x.status == "ok"), x.render()
        assert x.slack_s is None or isinstance(x.slack_s, int), x.render()


def test_a_passing_finding_reads_the_same_in_json() -> None:
    [x] = [x for x in evaluate(build()) if x.id == "failover-ignores-deploys"]
    assert x.as_dict() == {
        "id": "failover-ignores-deploys", "severity": "error", "status": "ok", "subject": "failover",
        "relation": "==", "left": {"label": "entry service", "value": "api", "source": "failover.entry_service"},
        "right": {"label": "rollout", "value": "keeps capacity", "source": "rollout-keeps-capacity"},
        "margin_s": 0, "slack_s": None, "fix": "", "needs": [], "reason": "",
        "message": "OK failover-ignores-deploys  failover: entry service api (failover.entry_service) = rollout "
                   "keeps capacity (rollout-keeps-capacity)",
    }
    [r53] = [x for x in evaluate(build()) if x.id == "lb-values-in-range" and x.left.label == "failure_threshold"]
    assert (r53.severity, r53.margin_s, r53.slack_s) == ("error", 0, 2)
