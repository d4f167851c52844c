"""The node disruption sources as users deploy them → the model's `Nodes` pieces (issue 13).

One reader per source, each on the plain object Kubernetes spells:
- Karpenter `NodePool` (karpenter.sh/v1) → `KarpenterNodePool`;
- an `EC2NodeClass` (karpenter.k8s.aws/v1) whose AL2023 user data carries a nodeadm
  `NodeConfig` with kubelet settings → `KubeletShutdown`;
- a `KubeletConfiguration` document (kubelet.config.k8s.io/v1beta1) → `KubeletShutdown`;
- the Karpenter controller's container: its interruption queue (flag or environment);
- the Cluster Autoscaler's container args → `ClusterAutoscaler`;
- aws-node-termination-handler's container args/environment → `TerminationHandler`.

Each reader returns the piece and the defaults it applied (a field the source leaves unset is
its upstream default, said so); what no source states is not decided here (`timing.bind.nodes`
reports it unknown). A value the API would refuse raises `ExtractError` naming the field and
the allowed range. Which resources are which source, and how they combine, is `timing.bind.nodes`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from email import message_from_string
from typing import Any

import yaml

from lockstep.timing import limits as L
from lockstep.timing.extract.values import ExtractError, build, get, items
from lockstep.timing.model import ClusterAutoscaler, KarpenterNodePool, KubeletShutdown, TerminationHandler

# Go's time.ParseDuration: a sequence of decimal numbers, each with a unit ("90s", "1m30s",
# "1.5h"); a bare "0" is zero. Kubernetes' metav1.Duration (the kubelet's shutdownGracePeriod)
# and Karpenter's duration fields are parsed by it (Go `time` package docs; Karpenter's NodePool
# CRD narrows its fields to whole s/m/h units by pattern).
_DURATION = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
NEVER = "Never"  # Karpenter's consolidateAfter: consolidation never starts


class FieldError(ExtractError):
    """Bad input at one field: `path` is its key path in the object (for the line)."""

    def __init__(self, message: str, path: tuple[Any, ...] = ()) -> None:
        super().__init__(message)
        self.path = path


def _path(where: str) -> tuple[Any, ...]:
    """A dotted field path ("spec.disruption.budgets[0].nodes") as keys."""
    return tuple(int(k) if k.isdigit() else k for k in re.split(r"[.\[\]]+", where) if k)


def whole_s(raw: Any, where: str) -> int:
    """Whole seconds written as digits (an annotation, a flag, a ConfigMap value); anything
    else is a `FieldError` naming `where`."""
    text = str(raw).strip()
    if not text.isdigit():
        raise FieldError(f"{where}: expected whole seconds, got {raw!r}")
    return int(text)


def duration_s(raw: Any, where: str, lo: int = L.SECONDS.lo, hi: int = L.SECONDS.hi) -> int:
    """A Go duration as whole seconds, rounded down (the bound that holds: a grace of 1.5 s
    grants at least 1 s). Unparsable, negative or out of `lo`–`hi` s: `ExtractError` naming
    `where` and the range."""
    text = str(raw).strip() if isinstance(raw, (str, int)) and not isinstance(raw, bool) else None
    allowed = f"allowed: a Go duration such as 90s or 1m30s, {lo}–{hi}s"
    if text is None or not text:
        raise FieldError(f"{where}: expected a duration, got {raw!r} ({allowed})", _path(where))
    sign, body = (-1, text[1:]) if text[0] == "-" else (1, text.removeprefix("+"))
    if body == "0":
        total = 0.0
    else:
        pos, total = 0, 0.0
        for m in _DURATION.finditer(body):
            if m.start() != pos or m.group(1) in ("", "."):
                break
            total += float(m.group(1)) * _UNIT_S[m.group(2)]
            pos = m.end()
        if pos != len(body) or not body:
            raise FieldError(f"{where}: {raw!r} is not a duration ({allowed})", _path(where))
    seconds = math.floor(sign * total)
    if not lo <= seconds <= hi:
        raise FieldError(f"{where}: {raw!r} is out of range ({allowed})", _path(where))
    return seconds


# ---- Karpenter NodePool ---------------------------------------------------------------------
CAPACITY_TYPE = "karpenter.sh/capacity-type"
# Karpenter NodePool docs (concepts/nodepools, disruption): a NodePool without a
# karpenter.sh/capacity-type requirement launches on-demand capacity; consolidationPolicy
# defaults to WhenEmptyOrUnderutilized and consolidateAfter to 0s; with no budgets a default
# budget of nodes: 10% applies, and with several the most restrictive one holds;
# terminationGracePeriod unset means Karpenter waits for every pod to go (no node budget).
_POOL_FIELDS = KarpenterNodePool.model_fields


def _capacity_types(reqs: list[Any], where: str) -> tuple[str, ...] | None:
    """The values the capacity-type requirement allows (None: no such requirement)."""
    for r in reqs:
        if get(r, "key") != CAPACITY_TYPE:
            continue
        op, values = get(r, "operator"), [str(v) for v in items(get(r, "values"))]
        known = ("spot", "on-demand", "reserved")
        if op == "In":
            chosen = [v for v in known if v in values]
        elif op == "NotIn":
            chosen = [v for v in known if v not in values]
        elif op == "Exists":
            chosen = list(known)
        else:
            raise ExtractError(f"{where}: requirement {CAPACITY_TYPE} operator {op!r} (allowed: In, NotIn, Exists)")
        # reserved capacity (capacity reservations) behaves as on-demand for interruptions
        out = tuple(dict.fromkeys("on-demand" if v == "reserved" else v for v in chosen))
        if not out:
            raise ExtractError(f"{where}: requirement {CAPACITY_TYPE} allows no capacity type "
                               "(allowed values: spot, on-demand, reserved)")
        return out  # type: ignore[return-value]
    return None


def _budget_nodes(budgets: list[Any], where: str) -> int | str | None:
    """The most restrictive `nodes` of budgets that always apply (no schedule): a count wins
    over a percentage only when smaller is certain, so both kinds are kept apart: the smallest
    count if any, else the smallest percentage. None: no budget stated."""
    counts, percents = [], []
    for i, b in enumerate(budgets):
        if get(b, "schedule") is not None:
            continue  # a scheduled budget holds only in its window
        raw = str(get(b, "nodes") if get(b, "nodes") is not None else "10%").strip()
        if re.fullmatch(r"(100|[1-9]?[0-9])%", raw):
            percents.append(raw)
        elif raw.isdigit():
            counts.append(int(raw))
        else:
            raise FieldError(f"{where}.budgets[{i}].nodes: {raw!r} (allowed: a whole number ≥0 or 0%–100%)",
                             _path(f"{where}.budgets[{i}].nodes"))
    if counts:
        return min(counts)
    if percents:
        return min(percents, key=lambda p: int(p[:-1]))
    return None


def nodepool(obj: Mapping[str, Any]) -> tuple[KarpenterNodePool, list[str]]:
    """A Karpenter NodePool (karpenter.sh/v1) → the model's pool, and the defaults applied."""
    name = str(get(obj, "metadata", "name") or "")
    defaults: list[str] = []
    data: dict[str, Any] = {"name": name}
    tgp = get(obj, "spec", "template", "spec", "terminationGracePeriod")
    if tgp is None:
        defaults.append(f"NodePool {name}: terminationGracePeriod unset (Karpenter waits for every pod: no node budget)")
    else:
        data["termination_grace_period_s"] = duration_s(tgp, "spec.template.spec.terminationGracePeriod")
    reqs = items(get(obj, "spec", "template", "spec", "requirements"))
    caps = _capacity_types(reqs, "spec.template.spec.requirements")
    if caps is None:
        defaults.append(f"NodePool {name}: no {CAPACITY_TYPE} requirement (on-demand)")
    else:
        data["capacity_types"] = caps
    disruption = get(obj, "spec", "disruption") or {}
    policy = get(disruption, "consolidationPolicy")
    if policy is None:
        defaults.append(f"NodePool {name}: consolidationPolicy {_POOL_FIELDS['consolidation_policy'].default}")
    else:
        data["consolidation_policy"] = policy
    after = get(disruption, "consolidateAfter")
    if after is None:
        defaults.append(f"NodePool {name}: consolidateAfter {_POOL_FIELDS['consolidate_after_s'].default}s")
    elif after == NEVER:
        defaults.append(f"NodePool {name}: consolidateAfter Never (no consolidation; the model keeps "
                        f"{_POOL_FIELDS['consolidate_after_s'].default}s, which no node rule reads)")
    else:
        data["consolidate_after_s"] = duration_s(after, "spec.disruption.consolidateAfter")
    budget = _budget_nodes(items(get(disruption, "budgets")), "spec.disruption")
    if budget is None:
        defaults.append(f"NodePool {name}: disruption budget nodes {_POOL_FIELDS['budget_nodes'].default}")
    else:
        data["budget_nodes"] = budget
    try:
        return build(KarpenterNodePool, data), defaults
    except ExtractError as err:
        raise ExtractError(f"NodePool {name}: {err}") from None


# ---- the kubelet's graceful node shutdown ---------------------------------------------------
# KubeletConfiguration (kubelet.config.k8s.io/v1beta1, kubelet config API reference and the
# "Node Shutdowns" concept page): shutdownGracePeriod and shutdownGracePeriodCriticalPods both
# default to 0s, which leaves graceful node shutdown off; the critical pods' share is part of
# the whole period and must not exceed it.
KUBELET_KEYS = {"shutdownGracePeriod": "shutdown_grace_period_s",
                "shutdownGracePeriodCriticalPods": "shutdown_grace_period_critical_pods_s"}


def kubelet_shutdown(config: Mapping[str, Any], where: str) -> tuple[KubeletShutdown, list[str]]:
    """KubeletConfiguration fields (a document, or a NodeConfig's `spec.kubelet.config`) →
    the shutdown budget, and the defaults applied."""
    data: dict[str, Any] = {}
    defaults = []
    for key, field in KUBELET_KEYS.items():
        raw = get(config, key)
        if raw is None:
            defaults.append(f"{where}: {key} 0s (unset)")
        else:
            data[field] = duration_s(raw, f"{where}.{key}")
    total, critical = data.get("shutdown_grace_period_s", 0), data.get("shutdown_grace_period_critical_pods_s", 0)
    if critical > total:  # the kubelet refuses a critical share larger than the whole period
        raise FieldError(f"{where}.shutdownGracePeriodCriticalPods: {critical}s exceeds shutdownGracePeriod "
                         f"{total}s (allowed: 0s–shutdownGracePeriod)", ("shutdownGracePeriodCriticalPods",))
    return build(KubeletShutdown, data), defaults


NODECONFIG = ("node.eks.aws/v1alpha1", "NodeConfig")


def nodeconfig_kubelet(user_data: Any) -> Mapping[str, Any] | None:
    """The kubelet settings of the nodeadm `NodeConfig` in an EC2NodeClass's AL2023 user data
    (`spec.kubelet.config`), which nodeadm merges over the AMI's defaults. The user data is a
    NodeConfig YAML document or a MIME multi-part document with a part of type
    `application/node.eks.aws` (amazon-eks-ami nodeadm docs). None: no NodeConfig states
    kubelet settings."""
    if not isinstance(user_data, str) or not user_data.strip():
        return None
    texts = []  # pragma: no mutate (both branches below assign texts: this only declares it)
    if "MIME-Version" in user_data or "Content-Type:" in user_data:
        msg = message_from_string(user_data)
        parts = msg.walk()  # a single-part message walks as itself
        texts = [str(p.get_payload()) for p in parts
                 if not p.is_multipart() and p.get_content_type() == "application/node.eks.aws"]
    else:
        texts = [user_data]
    found: Mapping[str, Any] | None = None
    for text in texts:
        try:
            docs = list(yaml.safe_load_all(text))
        except yaml.YAMLError as err:
            raise ExtractError(f"spec.userData: the NodeConfig part is not YAML ({err.__class__.__name__})") from None
        for d in docs:
            if (get(d, "apiVersion"), get(d, "kind")) == NODECONFIG and isinstance(get(d, "spec", "kubelet", "config"), Mapping):
                found = {**(found or {}), **get(d, "spec", "kubelet", "config")}
    return found


# ---- controllers' flags and environment -----------------------------------------------------
def settings(container: Mapping[str, Any]) -> dict[str, str]:
    """A container's `--flag=value` / `--flag value` args (and command) and its literal env
    values, by flag name (without dashes) and variable name. A flag given twice: the last wins,
    as Go's flag package does; a flag wins over its variable (both controllers read the
    variable only as the flag's default)."""
    out: dict[str, str] = {}
    for e in items(get(container, "env")):
        if isinstance(get(e, "name"), str) and get(e, "value") is not None:
            out[str(get(e, "name"))] = str(get(e, "value"))
    words = [str(w) for w in items(get(container, "command")) + items(get(container, "args"))]
    for i, w in enumerate(words):
        if not w.startswith("-"):
            continue
        flag, eq, value = w.lstrip("-").partition("=")
        if eq:
            out[flag] = value
        elif i + 1 < len(words) and not words[i + 1].startswith("-"):
            out[flag] = words[i + 1]
        else:
            out[flag] = "true"  # a bare boolean flag
    return out


def setting(values: Mapping[str, str], flag: str, env: str) -> str | None:
    return values.get(flag, values.get(env))


def flag_bool(raw: str, where: str) -> bool:
    # Go's strconv.ParseBool, which the flag package uses
    if raw in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if raw in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise ExtractError(f"{where}: {raw!r} is not a boolean (allowed: true, false)")


def whole(raw: str, where: str, lo: int, hi: int) -> int:
    text = raw.strip()
    if not text.removeprefix("-").isdigit() or not lo <= int(text) <= hi:
        raise ExtractError(f"{where}: {raw!r} (allowed: a whole number {lo}–{hi})")
    return int(text)


# Karpenter's controller (karpenter-provider-aws operator options): `--interruption-queue`,
# default from the INTERRUPTION_QUEUE variable, empty by default; interruption handling
# (draining a spot node on its notice) is off unless a queue is named. The chart sets the
# variable from `settings.interruptionQueue`.
KARPENTER_QUEUE = ("interruption-queue", "INTERRUPTION_QUEUE")


def karpenter_interruption_queue(container: Mapping[str, Any]) -> tuple[bool, list[str]]:
    raw = setting(settings(container), *KARPENTER_QUEUE)
    if raw is None:
        return False, ["Karpenter controller: no interruption queue (INTERRUPTION_QUEUE unset: spot notices not handled)"]
    return bool(raw.strip()), []


# Cluster Autoscaler `--max-graceful-termination-sec` (the value and its default: `limits`).
CA_FLAG = "max-graceful-termination-sec"


def cluster_autoscaler(container: Mapping[str, Any]) -> tuple[ClusterAutoscaler, list[str]]:
    raw = settings(container).get(CA_FLAG)
    if raw is None:
        return ClusterAutoscaler(), [f"Cluster Autoscaler: --{CA_FLAG} {L.CA_MAX_GRACEFUL_TERMINATION_DEFAULT} (unset)"]
    return ClusterAutoscaler(max_graceful_termination_s=whole(raw, f"--{CA_FLAG}", *L.SECONDS)), []


# aws-node-termination-handler (pkg/config): `--pod-termination-grace-period` /
# POD_TERMINATION_GRACE_PERIOD, default -1; a negative value gives each pod its own
# terminationGracePeriodSeconds. `--node-termination-grace-period` / NODE_TERMINATION_GRACE_PERIOD,
# default 120 (limits). Queue-processor mode is `--enable-sqs-termination-draining` /
# ENABLE_SQS_TERMINATION_DRAINING (default false: IMDS mode, a DaemonSet on every node); in IMDS
# mode spot notices are drained unless `--enable-spot-interruption-draining` /
# ENABLE_SPOT_INTERRUPTION_DRAINING is false (default true). These are the handler's config code
# defaults; an old chart README listed a deprecated `gracePeriod` at 30 s, and the code wins.
NTH_POD_GRACE = ("pod-termination-grace-period", "POD_TERMINATION_GRACE_PERIOD")
NTH_NODE_GRACE = ("node-termination-grace-period", "NODE_TERMINATION_GRACE_PERIOD")
NTH_QUEUE = ("enable-sqs-termination-draining", "ENABLE_SQS_TERMINATION_DRAINING")
NTH_SPOT = ("enable-spot-interruption-draining", "ENABLE_SPOT_INTERRUPTION_DRAINING")
NTH_POD_GRACE_DEFAULT = -1


def termination_handler(container: Mapping[str, Any]) -> tuple[TerminationHandler | None, list[str]]:
    """The handler, or None when it is set not to drain spot notices (IMDS mode with spot
    interruption draining off): it then drains nothing the node rules count."""
    values = settings(container)
    defaults: list[str] = []
    raw_queue = setting(values, *NTH_QUEUE)
    queue = flag_bool(raw_queue, f"--{NTH_QUEUE[0]}") if raw_queue is not None else False
    data: dict[str, Any] = {"mode": "queue" if queue else "imds"}
    if not queue:
        raw_spot = setting(values, *NTH_SPOT)
        if raw_spot is not None and not flag_bool(raw_spot, f"--{NTH_SPOT[0]}"):
            return None, ["aws-node-termination-handler: spot interruption draining off: drains no spot node"]
    raw = setting(values, *NTH_POD_GRACE)
    grace = whole(raw, f"--{NTH_POD_GRACE[0]}", -L.SECONDS.hi, L.SECONDS.hi) if raw is not None else None
    if grace is None:
        defaults.append(f"aws-node-termination-handler: --{NTH_POD_GRACE[0]} {NTH_POD_GRACE_DEFAULT} "
                        "(unset: each pod's own grace)")
    if grace is not None and grace >= 0:
        data["pod_termination_grace_period_s"] = grace
    raw_node = setting(values, *NTH_NODE_GRACE)
    if raw_node is None:
        defaults.append(f"aws-node-termination-handler: --{NTH_NODE_GRACE[0]} {L.NTH_NODE_TERMINATION_GRACE_DEFAULT}")
    else:
        data["node_termination_grace_period_s"] = whole(raw_node, f"--{NTH_NODE_GRACE[0]}", *L.SECONDS)
    return build(TerminationHandler, data), defaults
