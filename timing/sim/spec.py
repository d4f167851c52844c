"""The raw numbers the simulation reads, lifted out of the model once.

The simulation is an oracle for the rules, so it must not share their arithmetic: it never
imports `timing.invariants` or `timing.derived`. It reads the model's raw fields and
resolves them the way the systems do (Kubernetes rounds maxSurge up and maxUnavailable
down, PDB percentages up). The specs are frozen and hashable, so `timing.mutate` can reuse
a result when a mutant leaves every number a service's simulation reads unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from lockstep.timing import limits as L
from lockstep.timing.heartbeat_config import unseen_field
from lockstep.timing.inputs import ConfigError
from lockstep.timing.hopkinds import HOP_KINDS
from lockstep.timing.lbkinds import KINDS
from lockstep.timing.model import LoadBalancer, Probe, Service, Stack
from lockstep.timing.workloads import WORKLOAD_KINDS


@dataclass(frozen=True, slots=True)
class ProbeSpec:
    initial_delay: int
    period: int
    timeout: int
    success: int
    failure: int


@dataclass(frozen=True, slots=True)
class LbSpec:
    kind: str  # alb | nlb
    target_type: str  # ip | instance
    http: bool
    idle_timeout: int
    interval: int
    timeout: int
    healthy_threshold: int
    unhealthy_threshold: int
    deregistration_delay: int
    removal: tuple[str, ...]
    deregistration_propagation: int
    registration_propagation: int
    endpoint_propagation: int
    # NLB target group connection attributes (issue 13), as the model holds them.
    unhealthy_reset: bool = True
    unhealthy_draining: int = 0
    dereg_reset: bool = False
    # externalTrafficPolicy Local on instance targets: the LB checks the node's
    # healthCheckNodePort, which answers by the node's ready local endpoints.
    node_check: bool = False

    @property
    def via_kube_proxy(self) -> bool:
        """Instance targets removed by endpoints: the LB sends to nodes, kube-proxy picks pods."""
        return self.target_type == "instance" and "endpoints" in self.removal


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """What removes the nodes under a service, as the declared sources do it (issue 13)."""

    pool_grace: int | None  # the least NodePool terminationGracePeriod; None: unset (waits for every pod)
    pool_budgets: tuple[int | str, ...]  # each NodePool's disruption budget (nodes); (): no NodePool
    spot: bool  # spot capacity runs here
    spot_drained: bool  # a handler drains a spot node on its notice
    spot_reaction: int  # notice to drain start (unknown: 0, as `_node_budget` counts it)
    kubelet: int  # shutdownGracePeriod − shutdownGracePeriodCriticalPods; 0: no graceful shutdown
    undrained: bool  # nodes may shut down with no drain in front (`Nodes.undrained_shutdowns`)


@dataclass(frozen=True, slots=True)
class WatchdogSpec:
    period: int
    failures: int


@dataclass(frozen=True, slots=True)
class HeartbeatSpec:
    name: str
    observe: int
    loss: int
    recovery: int
    max_outage: int


@dataclass(frozen=True, slots=True)
class LinkSpec:
    """Two adjacent hops that speak HTTP to each other: the outer one reuses an idle pooled
    connection for up to `pool_idle` seconds, the inner one closes a connection idle for
    `client_idle` seconds."""

    name: str  # "the LB → path[0] (ingress-nginx)"
    pool_idle: int
    client_idle: int

    @property
    def races(self) -> bool:
        return self.client_idle <= self.pool_idle


@dataclass(frozen=True, slots=True)
class ProxyStop:
    """How an ingress proxy's own pod goes (ingress-nginx: SIGTERM, `--shutdown-grace-period`
    accepting on, then a graceful quit whose workers are killed `worker-shutdown-timeout`
    later, the whole pod at its grace), and the load balancer in front of its pods."""

    name: str
    delay: int  # SIGTERM to "stops accepting"
    worker: int  # then its workers may finish this long
    grace: int  # the pod is killed this long after SIGTERM
    front: LbSpec | None  # None: not stated, so nothing is sent to the leaving pod


@dataclass(frozen=True, slots=True)
class PathSpec:
    """What the delivery path in front of the app does to a request, hop by hop: the HTTP links,
    the longest wait of each hop in front for an answer (then 504), and the proxies that replace
    their workers on any configuration change, with how long the old ones may finish."""

    links: tuple[LinkSpec, ...] = ()
    waits: tuple[tuple[str, int], ...] = ()
    reloads: tuple[tuple[str, int], ...] = ()
    mesh_drain: int | None = None  # the pod's mesh proxy keeps passing requests this long after SIGTERM
    stops: tuple[ProxyStop, ...] = ()  # the ingress proxies whose own pods may be replaced
    app_first: bool = False  # the app's container may start before the pod's mesh proxy is ready


@dataclass(frozen=True, slots=True)
class ServiceSpec:
    name: str
    kind: str  # Deployment | StatefulSet
    replicas: int
    warmup: int
    max_request: int | None
    keepalive: int | None
    catch_up: int
    max_recovery: int | None
    lb: LbSpec | None
    startup: ProbeSpec | None
    readiness: ProbeSpec | None
    liveness: ProbeSpec | None
    drain: int
    finish: int | None
    grace: int
    node_budget: int | None
    sidecar_drain: int | None
    surge: int
    unavailable: int
    min_ready: int
    progress_deadline: int
    pdb_keep: int | None  # pods a PDB keeps available; None: no PDB
    gate: str  # none | passes | never (a gate injected that can never turn true)
    gate_poll: int
    schedule: int
    watchdog: WatchdogSpec | None
    heartbeat: tuple[HeartbeatSpec, ...]
    # An Argo Rollout that switches a Service (blue-green, canary with ALB traffic routing):
    # the old ReplicaSet is scaled down this long after the switch. None: no switch (a
    # Deployment, a StatefulSet, or a basic canary, which rolls as a Deployment does).
    scale_down_delay: int | None = None
    nodes: NodeSpec | None = None  # None: the stack declares no node sources
    path: PathSpec = PathSpec()

    @property
    def links(self) -> tuple[LinkSpec, ...]:
        return self.path.links


def keepalive_can_race(spec: ServiceSpec) -> bool:
    """Some hop of the path may close an idle connection from the hop in front before that hop
    stops reusing it: only then can a request be sent into a closing socket."""
    return any(link.races for link in spec.links)


def path_spec(svc: Service) -> PathSpec:
    """The hops as the proxies behave, read from the model's raw fields and the kind tables:
    a hop's setting it lacks, or an unknown one, closes and limits nothing. An NLB's TCP or TLS
    listener passes the connection through: the first HTTP hop is then the one behind it."""
    hops: list[tuple[str, int | None, int | None, int | None]] = []  # name, client idle, pool idle, wait
    lb = svc.lb
    if lb is not None and lb.protocol in KINDS[lb.kind].http_protocols:
        # an ALB reuses a connection to a target for its idle timeout, and answers 504 when the
        # target sends nothing for as long (ALB attributes, "Connection idle timeout")
        hops.append(("the LB", None, lb.idle_timeout_s, lb.idle_timeout_s))
    reloads, stops, mesh_drain, app_first = [], [], None, False
    for i, hop in enumerate(svc.path):
        kind = HOP_KINDS[hop.kind]

        def has(f: str) -> int | None:
            return getattr(hop, f) if f in kind.upstream else None

        name = f"path[{i}] ({hop.kind})"
        hops.append((name, has("client_idle_s"), has("upstream_idle_s"), has("request_timeout_s")))
        if kind.reloads and has("worker_shutdown_s") is not None:
            reloads.append((name, hop.worker_shutdown_s))
            if hop.shutdown_delay_s is not None and hop.grace_s is not None:
                stops.append(ProxyStop(name, hop.shutdown_delay_s, hop.worker_shutdown_s, hop.grace_s, _lb(hop.lb)))
        if kind.role == "mesh":
            mesh_drain = has("drain_s")
            app_first = has("app_waits") is False  # unknown: not simulated, as the rule skips it
    hops.append(("the app", svc.app.keepalive_s, None, None))
    links = tuple(LinkSpec(f"{a[0]} → {b[0]}", a[2], b[1]) for a, b in zip(hops, hops[1:])
                  if a[2] is not None and b[1] is not None)
    waits = tuple((h[0], h[3]) for h in hops if h[3] is not None)
    return PathSpec(links, waits, tuple(reloads), mesh_drain, tuple(stops), app_first)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def resolve(value: int | str, replicas: int, round_up: bool) -> int:
    """An int-or-percent against a replica count, rounded as Kubernetes rounds it."""
    if isinstance(value, int):
        return value
    pct = int(value.rstrip("%"))
    return _ceil_div(pct * replicas, 100) if round_up else pct * replicas // 100


def _probe(p: Probe | None) -> ProbeSpec | None:
    if p is None:
        return None
    return ProbeSpec(p.initial_delay_s, p.period_s, p.timeout_s, p.success_threshold, p.failure_threshold)


def _lb(lb: LoadBalancer | None) -> LbSpec | None:
    if lb is None:
        return None
    hc = lb.health_check
    removal = tuple(lb.removal)
    node_check = lb.target_type == "instance" and lb.external_traffic_policy == "Local"
    if node_check:
        # With Local the LB sends to a node while its healthCheckNodePort passes: an endpoint
        # update does not take the node out (kube-proxy then serves the node's terminating
        # endpoints, KEP-1669); only the node check does (kubernetes #73362).
        removal = tuple(p for p in removal if p != "endpoints")
        removal += () if "health_check" in removal else ("health_check",)
    return LbSpec(lb.kind, lb.target_type, lb.protocol in ("HTTP", "HTTPS"), lb.idle_timeout_s,
                  hc.interval_s, hc.timeout_s, hc.healthy_threshold, hc.unhealthy_threshold,
                  lb.deregistration_delay_s, removal, lb.deregistration_propagation_s,
                  lb.registration_propagation_s, lb.endpoint_propagation_s,
                  lb.unhealthy_connection_termination, lb.unhealthy_draining_interval_s,
                  lb.deregistration_connection_termination, node_check)


def _gate(svc: Service) -> str:
    gate = svc.readiness_gate
    # The webhook injects the gate only into pods created in a labelled namespace after
    # the binding exists; an injected gate turns true only for an attached IP target group.
    if gate is None or not gate.namespace_labelled or not gate.injected_after_binding:
        return "none"
    lb = svc.lb
    if lb is None or lb.target_type != "ip" or lb.attach_to_arn is None:
        return "never"
    return "passes"


def _pdb_keep(svc: Service, n: int) -> int | None:
    pdb = svc.pdb
    if pdb is None:
        return None
    if pdb.min_available is not None:
        return resolve(pdb.min_available, n, round_up=True)
    assert pdb.max_unavailable is not None
    return n - resolve(pdb.max_unavailable, n, round_up=True)


MAX_REPLICAS = 30  # larger services are simulated at this size, counts scaled (see `_scaled`)


def _scaled(n: int, surge: int, unavailable: int, keep: int | None) -> tuple[int, int, int, int | None]:
    """A service of more than MAX_REPLICAS pods, shrunk to MAX_REPLICAS with its rollout and
    PDB counts scaled so every predicate that decides harm keeps its truth value: surge ≥ 1,
    unavailable ≥ 1, unavailable ≥ replicas (no pod left), and keep = 0, 1 ≤ keep < replicas,
    keep ≥ replicas. The simulation cost grows with pods; these predicates do not."""
    if n <= MAX_REPLICAS:
        return n, surge, unavailable, keep
    m = MAX_REPLICAS

    def down(x: int) -> int:
        if x >= n:
            return m
        return min(m - 1, max(1 if x >= 1 else 0, x * m // n))

    return m, (m if surge >= n else max(1 if surge else 0, _ceil_div(surge * m, n))), down(unavailable), \
        (None if keep is None else down(keep))


def _node_budget(svc: Service, stack: Stack) -> int | None:
    """The seconds a node removal leaves this service's pods, as the systems grant them (not
    the rules' arithmetic): the service's own budget, else the least any declared drainer
    gives — the autoscaler's cap, a NodePool's terminationGracePeriod, the spot notice less the
    handler's reaction, the handler's pod grace, a lifecycle hook's timeout."""
    own, nodes = svc.shutdown.node_termination_budget_s, stack.nodes
    if own is not None or nodes is None:
        return own
    handler = nodes.termination_handler
    spot_drained = nodes.asg_spot and handler is not None
    grants = [p.termination_grace_period_s for p in nodes.karpenter if p.termination_grace_period_s is not None]
    for pool in nodes.karpenter:
        spot_drained = spot_drained or ("spot" in pool.capacity_types and (pool.interruption_queue or handler is not None))
    if nodes.cluster_autoscaler is not None:
        grants.append(nodes.cluster_autoscaler.max_graceful_termination_s)
    if spot_drained:
        grants.append(L.SPOT_NOTICE_S - (nodes.spot_reaction_s or 0))
    if handler is not None and handler.pod_termination_grace_period_s is not None:
        grants.append(handler.pod_termination_grace_period_s)
    if nodes.asg_lifecycle_hook is not None:
        grants.append(nodes.asg_lifecycle_hook.heartbeat_timeout_s)
    return min(grants) if grants else None


def _nodes(stack: Stack) -> NodeSpec | None:
    nodes = stack.nodes
    if nodes is None:
        return None
    pools = nodes.karpenter
    graces = [p.termination_grace_period_s for p in pools if p.termination_grace_period_s is not None]
    handler = nodes.termination_handler is not None
    spot_pools = [p for p in pools if "spot" in p.capacity_types]
    k = nodes.kubelet
    # Which NodePool a service's pods land on is not stated: the least grace and the tightest
    # budget of any pool stand for them (named in the scenario's note).
    return NodeSpec(
        pool_grace=min(graces) if graces else None, pool_budgets=tuple(p.budget_nodes for p in pools),
        spot=bool(spot_pools) or nodes.asg_spot,
        spot_drained=(any(p.interruption_queue or handler for p in spot_pools) or (nodes.asg_spot and handler)),
        spot_reaction=nodes.spot_reaction_s or 0,
        kubelet=0 if k is None else k.shutdown_grace_period_s - k.shutdown_grace_period_critical_pods_s,
        undrained=nodes.undrained_shutdowns)


def _scale_down_delay(svc: Service) -> int | None:
    argo = svc.argo
    if argo is None or (argo.strategy == "canary" and argo.traffic_routing is None):
        return None
    return argo.scale_down_delay_s


def service_spec(stack: Stack, svc: Service) -> ServiceSpec:
    real = svc.hpa.min_replicas if svc.hpa is not None else svc.replicas
    assert real is not None  # stack_specs refuses an unknown count first
    kind = WORKLOAD_KINDS[svc.kind]
    n, surge, unavailable, keep = _scaled(
        real, resolve(svc.rollout.max_surge, real, round_up=True),
        resolve(svc.rollout.max_unavailable, real, round_up=kind.unavailable_round_up), _pdb_keep(svc, real))
    wd = stack.watchdog
    watchdog = (WatchdogSpec(wd.period_s, wd.failures_before_action)
                if wd is not None and svc.name in wd.watches else None)
    hb = stack.heartbeat
    beats = tuple(HeartbeatSpec(s.name, getattr(hb, unseen_field(hb)), s.loss_time_s, s.recovery_time_s,
                                s.max_outage_s)
                  for s in stack.heartbeat_specs if hb is not None and s.service == svc.name)
    sd = svc.shutdown
    path = path_spec(svc)
    return ServiceSpec(
        # A DaemonSet's pods roll as a Deployment's do (surge, or a replacement started while the
        # old pod terminates), one per node: the controllers here are Deployment and StatefulSet.
        name=svc.name, kind="StatefulSet" if kind.in_place else "Deployment", replicas=n,
        warmup=svc.app.warmup_s or 0, max_request=svc.app.max_request_s,
        keepalive=svc.app.keepalive_s, catch_up=svc.app.catch_up_s or 0,
        max_recovery=svc.app.max_recovery_s, lb=_lb(svc.lb),
        startup=_probe(svc.probes.startup), readiness=_probe(svc.probes.readiness),
        liveness=_probe(svc.probes.liveness),
        drain=sd.drain_s, finish=sd.finish_s, grace=sd.grace_s, node_budget=_node_budget(svc, stack),
        sidecar_drain=svc.sidecar.drain_s if svc.sidecar is not None else path.mesh_drain,
        surge=surge, unavailable=unavailable,
        min_ready=svc.rollout.min_ready_s, progress_deadline=svc.rollout.progress_deadline_s,
        pdb_keep=keep, gate=_gate(svc), gate_poll=L.CONTROLLER_GATE_POLL_S,
        schedule=svc.schedule_s, watchdog=watchdog, heartbeat=beats,
        scale_down_delay=_scale_down_delay(svc), nodes=_nodes(stack), path=path,
    )


def stack_specs(stack: Stack) -> list[ServiceSpec]:
    unknown = [f"lockstep:services.{i}.replicas: the simulation needs the pod count (a {svc.kind}'s: the nodes "
               "it runs on)" for i, svc in enumerate(stack.services) if svc.hpa is None and svc.replicas is None]
    if unknown:
        raise ConfigError(unknown)
    return [service_spec(stack, svc) for svc in stack.services]
