"""Hypothesis strategies and helpers that build `Stack`s from the compliant example.

Every stack here starts from `Pulumi.example.yaml` (which passes every rule) and changes a
few numbers through dotted paths (`services.0.shutdown.drain_s`), so a test states only
what it changes. Strategies refuse impossible bounds (`InvalidArgument`) instead of
silently generating nothing.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from lockstep.timing.config import EXAMPLE, read_stack_values
from lockstep.timing.findings import Finding
from lockstep.timing.findings import Verdict
from lockstep.timing.invariants import BY_ID, errors, evaluate
from lockstep.timing.invariants.registry import stamp
from lockstep.timing.model import Stack

# Indices of the example's services (the example file is the fixture).
API, FOOTBALL, BASKETBALL = 0, 1, 2


@functools.lru_cache(maxsize=1)
def example_values() -> dict[str, Any]:
    """The example stack's `lockstep:` values as `lockstep check` reads them, once per process
    (shared: never change it; `base()` and `edit()` hand out copies)."""
    return read_stack_values(EXAMPLE)[0]


# Read at import: the mutation gate forks a child per mutant from the process that collected
# the tests, so a value read here is read once, not once in each child that needs it.
example_values()


def tree_copy(values: Any) -> Any:
    """A copy of YAML-shaped data (dicts, lists, scalars): what `copy.deepcopy` gives for it,
    without deepcopy's memo and dispatch (the tests copy the example thousands of times)."""
    if isinstance(values, dict):
        return {key: tree_copy(value) for key, value in values.items()}
    if isinstance(values, list):
        return [tree_copy(value) for value in values]
    return values


def base() -> dict[str, Any]:
    """A fresh, mutable copy of the example stack's `lockstep:` values."""
    return tree_copy(example_values())


def _walk(values: Any, path: str) -> tuple[Any, str | int]:
    *parents, last = path.split(".")
    node = values
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    return node, (int(last) if isinstance(node, list) else last)


def edit(values: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """Apply `{dotted.path: value}` changes; the value `DELETE` removes the key."""
    out = tree_copy(values)
    for path, value in changes.items():
        node, key = _walk(out, path)
        if value is DELETE:
            node.pop(key, None)
        else:
            node[key] = value
    return out


DELETE = object()
# The example drains every node before it stops (nodes.undrained_shutdowns: false), so
# node-shutdown-drains-without-endpoints is not judged on it; this lets its nodes shut down
# undrained under its kubelet shutdown, for the tests of that rule.
UNDRAINED = {"nodes.undrained_shutdowns": True}


def build(changes: dict[str, Any] | None = None, values: dict[str, Any] | None = None) -> Stack:
    """The example with `changes`, validated for shape only (rules are judged separately)."""
    data = edit(base() if values is None else values, changes or {})
    return Stack.model_validate(data)


# The stack last judged and its findings: a test asks `error_ids`, then `only`, about one stack,
# and judging the example's stack takes ~3 ms. A `Stack` is frozen, so its findings cannot
# change; holding it keeps its `id` from going to another object. Kept per process: the mutation
# gate forks a child per mutant from the process that collected the tests, and a stack judged
# there (without the mutant) is judged again in the child.
_last: tuple[int, Stack, tuple[Finding, ...]] | None = None


def judged(stack: Stack) -> tuple[Finding, ...]:
    """`evaluate(stack)`, judged once for the same stack asked about again."""
    global _last
    pid = os.getpid()
    if _last is None or _last[0] != pid or _last[1] is not stack:
        _last = (pid, stack, tuple(evaluate(stack)))
    return _last[2]


def error_ids(stack: Stack) -> set[str]:
    return {f.id for f in errors(judged(stack))}


def findings_of(stack: Stack, rule: str, subject: str | None = None) -> list[Finding]:
    return [f for f in judged(stack) if f.id == rule and (subject is None or f.subject == subject)]


def stamped(rule: str, verdicts: list[Verdict]) -> list[Finding]:
    """A rule body's verdicts as the walk reports them (the registry's id and severity)."""
    return [stamp(BY_ID[rule], v) for v in verdicts]


def only(stack: Stack, rule: str, subject: str | None = None) -> Finding:
    """The single finding of `rule` (for `subject`); fails loudly when there are several."""
    found = findings_of(stack, rule, subject)
    assert len(found) == 1, [f.render() for f in found]
    return found[0]


# ---- strategies ---------------------------------------------------------------------------
def seconds(lo: int, hi: int) -> st.SearchStrategy[int]:
    """Whole seconds in [lo, hi]; an empty interval is a bug in the test, not a skip."""
    if lo > hi:
        raise InvalidArgument(f"seconds({lo}, {hi}): empty range, nothing satisfies it")
    return st.integers(lo, hi)


def around(value: int, spread: int, lo: int, hi: int) -> st.SearchStrategy[int]:
    """Values near `value` (boundaries are where rules break), clipped to the API range."""
    a, b = max(lo, value - spread), min(hi, value + spread)
    return st.sampled_from([value]) | seconds(a, b)


# Knobs the broad strategy turns: path -> (spread, api lo, api hi). Centred on the example,
# so a good share of draws stays compliant and a good share crosses a boundary.
KNOBS: dict[str, tuple[int, int, int]] = {
    "margin_s": (3, 0, 3600),
    # api: ALB, IP targets, readiness gate, HPA
    "services.0.app.warmup_s": (10, 0, 86400),
    "services.0.app.max_request_s": (10, 0, 86400),
    "services.0.app.max_recovery_s": (25, 0, 86400),
    "services.0.app.keepalive_s": (20, 0, 86400),
    "services.0.lb.idle_timeout_s": (20, 1, 4000),
    "services.0.lb.health_check.interval_s": (3, 5, 300),
    "services.0.lb.health_check.timeout_s": (2, 2, 120),
    "services.0.lb.health_check.healthy_threshold": (3, 2, 10),
    "services.0.lb.deregistration_delay_s": (20, 0, 3600),
    "services.0.lb.deregistration_propagation_s": (5, 0, 3600),
    "services.0.lb.registration_propagation_s": (5, 0, 3600),
    "services.0.shutdown.drain_s": (5, 0, 86400),
    "services.0.shutdown.finish_s": (5, 0, 86400),
    "services.0.shutdown.grace_s": (10, 0, 86400),
    "services.0.probes.startup.failure_threshold": (4, 1, 100),
    "services.0.probes.readiness.failure_threshold": (2, 1, 100),
    "services.0.probes.liveness.failure_threshold": (2, 1, 100),
    "services.0.hpa.min_replicas": (2, 1, 12),
    "services.0.pdb.min_available": (2, 0, 10000),
    # football-feed: no LB, heartbeat-watched Deployment
    "services.1.app.warmup_s": (30, 0, 86400),
    "services.1.app.catch_up_s": (40, 0, 86400),
    "services.1.replicas": (2, 0, 10000),
    "services.1.shutdown.finish_s": (10, 0, 86400),
    "services.1.shutdown.grace_s": (10, 0, 86400),
    "services.1.probes.readiness.period_s": (5, 1, 3600),
    "services.1.probes.liveness.period_s": (5, 1, 3600),
    "services.1.rollout.min_ready_s": (5, 0, 86400),
    "services.1.rollout.progress_deadline_s": (280, 1, 86400),
    # basketball-feed: NLB instance targets, StatefulSet
    "services.2.replicas": (2, 0, 10000),
    "services.2.lb.endpoint_propagation_s": (10, 0, 3600),
    "services.2.lb.health_check.healthy_threshold": (3, 2, 10),
    "services.2.shutdown.drain_s": (5, 0, 86400),
    "services.2.shutdown.grace_s": (10, 0, 86400),
    "services.2.probes.startup.failure_threshold": (5, 1, 100),
    # watchdog, heartbeat, specs, failover
    "watchdog.period_s": (40, 1, 86400),
    "watchdog.failures_before_action": (3, 1, 100),
    "heartbeat.observe_interval_s": (10, 1, 3600),
    "heartbeat.resync_period_s": (10, 1, 86400),
    "heartbeat.ack_timeout_s": (10, 1, 3600),
    "heartbeat.publish_interval_s": (8, 1, 3600),
    "heartbeat.client_timeout_s": (15, 1, 86400),
    "heartbeat.beat_ttl_s": (10, 1, 86400),
    "heartbeat.replicas": (1, 1, 10),
    "heartbeat_specs.0.loss_time_s": (100, 1, 86400),
    "heartbeat_specs.0.recovery_time_s": (40, 0, 86400),
    "heartbeat_specs.1.loss_time_s": (30, 1, 86400),
    "heartbeat_specs.1.max_outage_s": (90, 1, 86400),
    "failover.check_interval_s": (20, 1, 3600),
    "failover.failure_threshold": (3, 1, 100),
    "failover.client_reconnect_s": (30, 0, 86400),
    "failover.rto_s": (40, 1, 86400),
    "failover.failback_checks": (2, 1, 100),
    # node disruption sources (issue 13)
    "nodes.spot_reaction_s": (60, 0, 86400),
    "nodes.karpenter.0.termination_grace_period_s": (250, 0, 86400),
    "nodes.kubelet.shutdown_grace_period_s": (40, 30, 86400),
}


# Flags drawn either way wherever the node knobs are turned: whether nodes shut down undrained
# decides whether node-shutdown-drains-without-endpoints is judged at all.
FLAGS = ("nodes.undrained_shutdowns",)


@st.composite
def varied_values(draw: st.DrawFn, knobs: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The example with some knobs turned: valid in shape (API ranges), any rule may break."""
    values = base()
    names = tuple(KNOBS) if knobs is None else knobs
    for path in names:
        node, key = _walk(values, path)
        spread, lo, hi = KNOBS[path]
        node[key] = draw(around(node[key], spread, lo, hi), label=path)
    if knobs is None or any(k.startswith("nodes.") for k in names):
        for path in FLAGS:
            node, key = _walk(values, path)
            node[key] = draw(st.booleans(), label=path)
    return values


def varied_stacks(knobs: tuple[str, ...] | None = None) -> st.SearchStrategy[Stack]:
    return varied_values(knobs).map(
        lambda v: Stack.model_validate(v))


def knobs_under(prefix: str) -> tuple[str, ...]:
    """The knobs whose path starts with `prefix` (refuses a prefix that matches none)."""
    found = tuple(k for k in KNOBS if k.startswith(prefix))
    if not found:
        raise InvalidArgument(f"no knob under {prefix!r}")
    return found


def expect_alone(stack, rule: str, broken: bool) -> None:
    """The validator names exactly `rule` when `broken`, and nothing otherwise."""
    assert error_ids(stack) == ({rule} if broken else set())
