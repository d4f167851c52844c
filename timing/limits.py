"""API limits and documented defaults, written once.

The model's field constraints, the `lb-values-in-range` rule, extraction and the config
mutator all read these tables: a limit is never typed twice. Sources: the ELBv2 API
(botocore's elbv2 model, AWS target group docs), Route 53's health check API, the
Kubernetes API, the AWS Load Balancer Controller docs, and INVARIANTS.md.
"""

from __future__ import annotations

from typing import Final, NamedTuple


class Range(NamedTuple):
    lo: int
    hi: int


# ---- ELBv2 target groups ------------------------------------------------------------
HC_INTERVAL: Final = Range(5, 300)
HC_TIMEOUT: Final = Range(2, 120)
HC_THRESHOLD: Final = Range(2, 10)
DEREGISTRATION_DELAY: Final = Range(0, 3600)
SLOW_START: Final = Range(30, 900)  # or 0 (disabled)
ALB_IDLE_TIMEOUT: Final = Range(1, 4000)  # ALB attribute idle_timeout.timeout_seconds
NLB_TCP_IDLE_TIMEOUT: Final = Range(60, 6000)  # NLB TCP listener attribute tcp.idle_timeout.seconds
NLB_IDLE_TIMEOUT_DEFAULT: Final = 350  # NLB TCP default, and fixed for TLS listeners
IDLE_TIMEOUT: Final = Range(1, 6000)  # any kind's (the kind's own range is lbkinds')
PORT: Final = Range(1, 65535)
PROPAGATION: Final = Range(0, 3600)

# ---- Route 53 health checks -----------------------------------------------------------
R53_REQUEST_INTERVALS: Final = (10, 30)
R53_FAILURE_THRESHOLD: Final = Range(1, 10)
R53_ALIAS_TTL: Final = 60  # an alias record to an ELB answers with the ELB's fixed 60 s TTL
DNS_TTL: Final = Range(0, 2147483647)

# ---- Kubernetes -----------------------------------------------------------------------
PROBE_PERIOD: Final = Range(1, 3600)
PROBE_TIMEOUT: Final = Range(1, 3600)
PROBE_THRESHOLD: Final = Range(1, 100)
PROBE_INITIAL_DELAY: Final = Range(0, 3600)
GRACE: Final = Range(0, 86400)
REPLICAS: Final = Range(0, 10000)
MIN_READY: Final = Range(0, 86400)
PROGRESS_DEADLINE: Final = Range(1, 86400)
SECONDS: Final = Range(0, 86400)  # any other duration the model holds
PERCENT: Final = Range(0, 100)

# ---- Documented defaults (INVARIANTS.md) ----------------------------------------------
# What differs by load-balancer kind (controller and API defaults, propagation delays) is in
# `timing.lbkinds`.
DEREGISTRATION_DELAY_DEFAULT: Final = 300
ENDPOINT_PROPAGATION_DEFAULT: Final = 10
CONTROLLER_GATE_POLL_S: Final = 15  # LBC re-checks target health for readiness gates
STATEFULSET_SCHEDULE_DEFAULT: Final = 10
MARGIN_DEFAULT: Final = 5
NATIVE_SLEEP_SINCE: Final = (1, 30)  # kubelet `sleep` lifecycle action is on by default
# Argo Rollouts (utils/defaults/defaults.go, docs/features/specification.md): blue-green, and a
# canary with traffic routing, wait 30 s after the switch before scaling the old ReplicaSet
# down; on abort the new one waits 30 s too (0 there means it is kept). A basic canary has no
# such delay. Canary maxSurge/maxUnavailable default to 25% each, as a Deployment's.
ARGO_SCALE_DOWN_DELAY_DEFAULT: Final = 30
# A DaemonSet's rolling update (apps/v1 RollingUpdateDaemonSet): at most 1 node's pod down at a
# time and no surge unless stated, unlike a Deployment's 25%/25%; percentages of either are
# taken of the nodes that should run the pod, rounded up.
DAEMONSET_ROLLOUT_DEFAULTS: Final = {"max_unavailable": 1, "max_surge": 0}

K8S_DEFAULTS: Final = {
    "grace_s": 30, "period_s": 10, "timeout_s": 1, "success_threshold": 1,
    "failure_threshold": 3, "initial_delay_s": 0, "max_surge": "25%",
    "max_unavailable": "25%", "min_ready_s": 0, "progress_deadline_s": 600,
}

# ---- Node disruptions (issue 13) -------------------------------------------------------
# Each value checked against the upstream source; where a controller's code and its docs could
# differ, the code was read and wins.
#
# Cluster Autoscaler `--max-graceful-termination-sec`: 600 s unless set. The flag's default in
# cluster-autoscaler's config/flags/flags.go is 10*60 (releases before 1.0 had 60); the FAQ and
# the AKS/ARO autoscaler profiles document the same 600. Its scale-down evicts each pod with the
# smaller of the pod's terminationGracePeriodSeconds and this flag (the scale-down's evictPod),
# so a longer pod grace is cut to it.
CA_MAX_GRACEFUL_TERMINATION_DEFAULT: Final = 600
# EC2 issues a Spot interruption notice two minutes before it stops or terminates the instance,
# best effort (EC2 user guide, "Spot Instance interruption notices"; with hibernation there is no
# two-minute warning, which lockstep does not model).
SPOT_NOTICE_S: Final = 120
# aws-node-termination-handler `--node-termination-grace-period`: 120 s unless set (pkg/config
# config.go, nodeTerminationGracePeriodDefault). The code uses it twice: as the drain's timeout,
# and to schedule the drain at the event's start time minus this period (the interruption event
# store's TimeUntilDrain). In IMDS mode a spot event's start time is the interruption itself, so a
# value below the notice delays the drain and leaves pods only this many seconds; in queue mode
# the start time is when EventBridge sent the notice and the drain begins at once.
NTH_NODE_TERMINATION_GRACE_DEFAULT: Final = 120
# EC2 Auto Scaling lifecycle hook `HeartbeatTimeout`: 30–7200 s, 3600 s when not given
# (Auto Scaling API reference, PutLifecycleHook).
ASG_HOOK_TIMEOUT: Final = Range(30, 7200)
ASG_HOOK_TIMEOUT_DEFAULT: Final = 3600
# NLB target group attribute `target_health_state.unhealthy.draining_interval_seconds`: 0–360000,
# 0 by default, settable only with `target_health_state.unhealthy.connection_termination.enabled`
# false (ELBv2 API reference, ModifyTargetGroupAttributes / TargetGroupAttribute).
NLB_UNHEALTHY_DRAINING: Final = Range(0, 360000)
