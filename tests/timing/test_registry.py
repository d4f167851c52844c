"""The registry of rules and the one walk over it: every catalogue id, every finding at once,
acknowledged breaks reported as accepted."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from hypothesis import given

from tests.timing.strategies import build, varied_stacks
from lockstep.timing.findings import Finding, Term
from lockstep.timing.findings import judge
from lockstep.timing.invariants import (BY_ID, RULE_IDS, RULES, Ctx, InvariantErrors, Scene, apply_accepts, context, errors,
                               evaluate, parse_version, raise_errors, walk)
from lockstep.timing.invariants.registry import stamp
from lockstep.timing.model import Accept

CATALOGUE = Path(__file__).resolve().parents[2] / "docs" / "INVARIANTS.md"


def test_the_registry_holds_the_51_rule_ids_of_the_catalogue() -> None:
    assert len(RULE_IDS) == 51 == len(set(RULE_IDS))
    if CATALOGUE.exists():
        documented = set(re.findall(r"^\| `([a-z0-9-]+)` \| (?:error|warning)", CATALOGUE.read_text(), re.M))
        assert documented == set(RULE_IDS)


def test_every_rule_is_judged_on_the_example() -> None:
    judged = {f.id for f in evaluate(build())}
    # the example uses the native sleep action and no health-check-only drain; none uses
    # externalTrafficPolicy Local, the NLB removes targets by endpoints only, and no watched
    # Deployment rolls by taking pods down, and every node is drained before it shuts down
    # (the broken variants in examples/ reach those rules). Its web and checkout reach the path rules.
    assert judged == set(RULE_IDS) - {"prestop-uses-native-sleep",
                                      "health-check-drain-needs-peers",
                                      "etp-local-drain-covers-node-check", "nlb-connections-survive-removal",
                                      "heartbeat-rides-out-rollout", "node-shutdown-drains-without-endpoints"}


def test_the_context_carries_the_margin_and_the_cluster_version() -> None:
    ctx = context(build({"margin_s": 7, "kubernetes_version": "1.29"}))
    assert ctx == Ctx(7, (1, 29))
    assert ctx.version_text == "1.29"
    assert parse_version("1.30") == (1, 30)
    assert parse_version("1.9") < parse_version("1.10")


def f(status: str, rule: str = "r-x", subject: str = "svc", service: str = "svc") -> Finding:
    return Finding(rule, "error", status, subject, Term("a", 1, "a"), ">=", Term("b", 2, "b"), 0, -1, "fix",
                   service=service)


def test_only_failed_findings_of_the_accepting_service_and_rule_are_accepted() -> None:
    svc = build().services[0].model_copy(update={"name": "svc", "accept": (Accept(id="r-x", reason="on purpose"),)})
    scene = Scene(services=(svc,))
    out = apply_accepts([f("error"), f("warning"), f("ok"), f("skipped"), f("error", rule="r-y"),
                         f("error", service="other"), f("error", subject="spec (svc)")], scene)
    assert [x.status for x in out] == ["accepted", "accepted", "ok", "skipped", "error", "error", "accepted"]
    assert out[0].reason == "on purpose"


def test_a_service_named_like_a_stack_subject_cannot_accept_the_stacks_finding() -> None:
    """A service named `failover` accepting failover-within-rto must not silence the stack's
    own finding (subject `failover`, no service): only the stack's `accept` list can."""
    values = {"failover.rto_s": 30, "services.1.name": "failover", "heartbeat_specs.0.service": "failover",
              "watchdog.watches.1": "failover",
              "services.1.accept": [{"id": "failover-within-rto", "reason": "named like the stack's subject"}]}
    [rto] = [x for x in evaluate(build(values)) if x.id == "failover-within-rto"]
    assert (rto.subject, rto.service, rto.status) == ("failover", "", "error")
    values["accept"] = [{"id": "failover-within-rto", "reason": "the business agreed a longer RTO"}]
    [rto] = [x for x in evaluate(build(values)) if x.id == "failover-within-rto"]
    assert (rto.status, rto.reason) == ("accepted", "the business agreed a longer RTO")


def test_the_stacks_accept_list_does_not_reach_a_services_findings() -> None:
    values = {"services.0.shutdown.drain_s": 19, "accept": [{"id": "drain-covers-lb-detection", "reason": "not the stack's"}]}
    [drain] = [x for x in evaluate(build(values)) if x.id == "drain-covers-lb-detection" and x.status != "ok"]
    assert (drain.service, drain.status) == ("api", "error")


def test_a_verdict_is_stamped_with_its_rules_id_and_severity() -> None:
    rule = BY_ID["drain-fits-grace"]
    v = judge("api", Term("a", 1, "a"), ">=", Term("b", 2, "b"), "fix")
    found = stamp(rule, v)
    assert (found.id, found.severity, found.status, found.subject, found.slack_s) == (
        "drain-fits-grace", "error", "error", "api", -1)
    assert stamp(rule, judge("api", Term("a", 2, "a"), ">=", Term("b", 2, "b"), "fix")).status == "ok"
    two = BY_ID["readiness-before-liveness"]
    assert stamp(two, judge("api", Term("a", 1, "a"), ">=", Term("b", 2, "b"), "f", case="warning")).status == "warning"
    with pytest.raises(ValueError, match="must name its case"):
        stamp(two, v)
    with pytest.raises(ValueError, match="severity 'warning' is not declared"):
        stamp(rule, judge("api", Term("a", 1, "a"), ">=", Term("b", 2, "b"), "f", case="warning"))


def id_literals(path: Path, ids: re.Pattern[str]) -> list[str]:
    """Rule ids inside string literals of a module (docstrings, which document, excluded)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [m.group(0) for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and id(n) not in docs for m in ids.finditer(n.value)]


def test_each_rule_id_is_written_once_in_production_code_outside_the_registry() -> None:
    """No id literal in timing/, infra/, policies/ or heartbeat/ but the registry's declaration:
    every list, table and message that names a rule reads it from there."""
    root = Path(__file__).resolve().parents[2]
    ids = re.compile("|".join(re.escape(i) for i in sorted(RULE_IDS, key=len, reverse=True)))
    registry = root / "timing" / "invariants" / "registry.py"
    assert sorted(id_literals(registry, ids)) == sorted(RULE_IDS)  # each declared exactly once
    elsewhere = {str(p.relative_to(root)): found for folder in ("timing", "infra", "policies", "heartbeat")
                 for p in (root / folder).rglob("*.py") if p != registry and (found := id_literals(p, ids))}
    assert elsewhere == {}


def test_every_declaration_is_complete() -> None:
    for r in RULES:
        assert r.severities in (("error",), ("warning",), ("error", "warning")), r.id
        assert r.checks and all(c.scope in ("lb", "service", "stack") for c in r.checks), r.id
        assert r.decided in ("resource", "resources", "config") and r.reads, r.id


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
    assert subjects == {"api", "checkout"}  # the ALB's target groups; the NLBs' checks have no such rule
    scopes = {c.scope for r in RULES for c in r.checks}
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
        "relation": "==", "left": {"label": "entry service", "value": "api", "source": "failover.entry_service",
                                   "fields": ["failover.entry_service"]},
        "right": {"label": "rollout", "value": "keeps capacity", "source": "failover.entry_service rollout",
                  "fields": ["failover.entry_service"]},
        "margin_s": 0, "slack_s": None, "fix": "", "needs": [], "reason": "",
        "message": "OK failover-ignores-deploys  failover: entry service api (failover.entry_service) = rollout "
                   "keeps capacity (failover.entry_service rollout)",
    }
    [r53] = [x for x in evaluate(build()) if x.id == "lb-values-in-range" and x.left.label == "failure_threshold"]
    assert (r53.severity, r53.margin_s, r53.slack_s) == ("error", 0, 2)


def test_the_readme_rule_tables_say_what_the_registry_declares() -> None:
    import runpy

    script = Path(__file__).resolve().parents[2] / "scripts" / "gen-rule-table"
    assert runpy.run_path(str(script))["main"](["--check"]) == 0, "README.md rule tables are stale"


def test_a_lone_target_group_gets_the_load_balancer_rules_alone() -> None:
    """A target group no workload stands behind (the audit's and the pack's lone groups): the
    lb-scope checks judge it under its own name; no other check reads it."""
    stack = build()
    lb = stack.services[0].lb
    found = walk(Scene(), context(stack), lone=(("tg-x", lb),))
    assert [f.id for f in found] == ["lb-timeout-below-interval", "lb-values-in-range"]
    assert {(f.subject, f.service, f.status) for f in found} == {("tg-x", "", "ok")}
    assert walk(Scene(), context(stack), scopes=("service", "stack"), lone=(("tg-x", lb),)) == []
