"""A finding's terms carry their model fields as data (`Term.fields`): every field a term's
text names is among them, and each is a field of the model — so locating a finding in a
file reads data, not the rendered text."""

from __future__ import annotations

import re
import typing

from hypothesis import given
from pydantic import BaseModel

from tests.timing.strategies import build, varied_stacks
from lockstep.timing.findings import Term
from lockstep.timing.invariants import evaluate
from lockstep.timing.model import FailoverTiming, HeartbeatService, HeartbeatSpec, Service, Stack, Watchdog

# a dotted field path, whole: `path[0].lb.x` is one path, not `lb.x` inside another
DOTTED = re.compile(r"(?<![\w.\]])(?:path\[\d+\]\.)?(?:app|shutdown|lb|probes|rollout|pdb|hpa|heartbeat|failover|watchdog|"
                    r"sidecar)(?:\.[a-z_]+)+\b")
ROOTS = (Service, Stack, HeartbeatSpec, HeartbeatService, FailoverTiming, Watchdog)


def models_in(annotation: object) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in models_in(arg)]


def resolves(path: str) -> bool:
    """The dotted path names a field of one of the model's classes."""
    for root in ROOTS:
        classes = [root]
        for part in path.split("."):
            part = re.sub(r"\[\d+\]$", "", part)  # an item of a list field: `pools[0]`, `path[1]`
            classes = [m for c in classes if part in c.model_fields
                       for m in (models_in(c.model_fields[part].annotation) or [None])]
            if not classes:
                break
        else:
            return True
    return False


SECONDS = re.compile(r"(?<![.\w])[a-z][a-z_]*_s\b")  # a top-level field in seconds: loss_time_s, schedule_s


def named(term: Term) -> set[str]:
    found = set(DOTTED.findall(term.source)) | {w for w in SECONDS.findall(term.source) if resolves(w)}
    return found | ({term.source} if resolves(term.source) else set())


def test_a_dotted_path_is_read_whole() -> None:
    assert DOTTED.findall("lb_detect 120s (deregistration: path[0].lb.deregistration_propagation_s)") == [
        "path[0].lb.deregistration_propagation_s"]
    assert resolves("path[0].lb.deregistration_propagation_s")


def test_the_field_resolver_knows_model_fields_from_made_up_ones() -> None:
    assert resolves("lb.health_check.interval_s") and resolves("probes.readiness.period_s")
    assert resolves("heartbeat.observe_interval_s") and resolves("loss_time_s") and resolves("replicas")
    assert not resolves("lb.health_check.intervals") and not resolves("probes.ready.period_s")


def check(stack: Stack) -> None:
    for f in evaluate(stack):
        for t in (f.left, f.right):
            assert named(t) <= set(t.fields), (f.render(), t)
            assert all(resolves(p) for p in t.fields), (f.render(), t.fields)
        assert set(f.needs) <= set(f.left.fields + f.right.fields), f.render()


def test_the_example_and_seed003_findings_carry_their_fields() -> None:
    check(build())
    check(build({"services.0.shutdown.drain_s": 5, "watchdog.failures_before_action": 1}))


def test_the_rules_the_example_does_not_reach_carry_their_fields_too() -> None:
    """A health-check-only drain, an exec preStop on a native-sleep cluster, a mesh sidecar."""
    stack = build({"services.0.lb.removal": ["health_check"], "services.2.shutdown.prestop": "exec",
                   "services.1.sidecar": {"drain_s": 1}})
    check(stack)
    by_id = {f.id: f for f in evaluate(stack) if f.subject != "checkout"}  # checkout's mesh hop: path[0]
    assert by_id["health-check-drain-needs-peers"].left.fields == ("hpa.min_replicas",)
    assert by_id["prestop-uses-native-sleep"].left.fields == ("shutdown.prestop",)
    assert by_id["sidecar-outlives-app"].left.fields == ("sidecar.drain_s",)


@given(varied_stacks())
def test_every_field_a_term_names_is_carried_as_data(stack: Stack) -> None:
    check(stack)


def test_a_statefulsets_capacity_reads_its_replicas_only() -> None:
    """A StatefulSet replaces pods one at a time whatever its rollout bounds say."""
    stack = build()
    by_subject = {f.subject: f for f in evaluate(stack) if f.id == "rollout-keeps-capacity"}
    assert by_subject["basketball-feed"].left.fields == ("replicas",)
    assert by_subject["football-feed"].left.fields == ("replicas", "rollout.max_unavailable", "rollout.max_surge")
