"""What the simulation moves: pods, load-balancer targets, and the counts a run keeps."""

from __future__ import annotations

from dataclasses import dataclass, field

INF = float("inf")


@dataclass
class Counts:
    """What one scenario run saw. Losses are what users feel; deliberate 503s are not."""

    requests: int = 0
    refused_502: int = 0  # sent to a target that no longer (or not yet) listens
    no_target_503: int = 0  # the LB (or kube-proxy) had nowhere to send it
    keepalive_502: int = 0  # sent on a connection the next hop had already closed
    timeout_504: int = 0  # a hop in front gave up waiting for the answer
    cut: int = 0  # in flight when the pod was killed, exited or the LB closed it
    deliberate_503: int = 0  # health checks answered 503 by a draining server (not a failure)
    false_blocks: int = 0  # heartbeat blocks during planned work
    premature_unblocks: int = 0  # heartbeat unblocked before the service's data is current
    watchdog_actions: int = 0  # watchdog "repairs" during planned work
    restarts: int = 0  # kubelet restarts during planned work (a probe's kill, an app crashing at start)
    deploy_failed: int = 0  # progress deadline exceeded, rollout stalled, eviction blocked
    zero_capacity: int = 0  # planned work left no pod available at some moment
    notes: list[str] = field(default_factory=list)
    by_hop: dict[str, int] = field(default_factory=dict)  # the losses above, by what and where on the path

    def at_hop(self, what: str, n: int = 1) -> None:
        self.by_hop[what] = self.by_hop.get(what, 0) + n

    @property
    def lost(self) -> int:
        return self.refused_502 + self.no_target_503 + self.keepalive_502 + self.timeout_504 + self.cut

    @property
    def harmful(self) -> bool:
        # (every count is ≥ 0: any of them is their sum being > 0, found at the first non-zero;
        # the engine asks after every event)
        return bool(self.refused_502 or self.no_target_503 or self.keepalive_502 or self.timeout_504 or self.cut
                    or self.false_blocks or self.premature_unblocks or self.watchdog_actions or self.restarts
                    or self.deploy_failed or self.zero_capacity)


class Pod:
    __slots__ = ("name", "created", "start", "listen_at", "started", "rd_pass", "gate_ok", "ready",
                 "ready_since", "term_at", "stop_at", "kill_at", "gone", "gone_at", "crashed",
                 "net_down", "inflight", "target", "restarts", "rd_ok", "rd_fail", "st_fail",
                 "lv_fail", "in_proxy", "registered", "selected", "idle", "busy", "signalled", "parked")

    def __init__(self, name: str, t: float) -> None:
        self.name = name
        self.created = t
        self.start = t
        self.listen_at = t
        self.started = False
        self.rd_pass = False
        self.gate_ok = False
        self.ready = False
        self.ready_since = INF
        self.term_at: float | None = None
        self.stop_at: float | None = None
        self.kill_at = INF
        self.gone = False
        self.gone_at = INF
        self.crashed = False
        self.net_down = False
        self.inflight: list[float] = []
        self.target: Target | None = None
        self.restarts = 0
        self.rd_ok = self.rd_fail = self.st_fail = self.lv_fail = 0
        self.in_proxy = False
        self.registered = False
        # The Service the traffic follows selects this pod (an Argo Rollout's new ReplicaSet is
        # selected only once the active/stable Service has switched to it).
        self.selected = True
        # Connections to the pod itself, through kube-proxy (instance targets: the LB's
        # connection ends at the pod the node forwarded it to), as a `Target` keeps them.
        self.idle: list[list[float]] = []
        self.busy: list[list[float]] = []
        # SIGTERM without a deletion (the kubelet's graceful node shutdown): the pod stays in
        # its endpoints (the kubelet stops probing it), and the app fails the LB's health checks
        # from here on.
        self.signalled = False
        # Probes whose rounds are left out while they can change nothing (`Checkers._idle`): the
        # time of each one's last round, until `Lifecycle._wake` puts the next one back.
        self.parked: dict[str, float] = {}

    def listening(self, t: float) -> bool:
        return (not self.gone and not self.crashed and not self.net_down and t >= self.listen_at
                and self.stop_at is None)


class Target:
    __slots__ = ("pod", "reg_at", "health", "ok", "fail", "no_new_after", "idle", "busy", "unhealthy_since",
                 "parked")

    def __init__(self, pod: Pod, reg_at: float, health: str) -> None:
        self.pod = pod
        self.reg_at = reg_at
        self.health = health  # initial | healthy | unhealthy
        self.ok = self.fail = 0
        self.no_new_after = INF
        # per link of the path toward this target (`ServiceSpec.links`): when each idle
        # connection went idle, and a heap of the end times of those in use
        self.idle: list[list[float]] = []
        self.busy: list[list[float]] = []
        self.unhealthy_since = INF  # when it last turned unhealthy (an NLB's draining interval runs from it)
        self.parked: float | None = None  # the LB's last health check left out after it (`Checkers._check_idle`)
