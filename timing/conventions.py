"""What `infra/` writes and the readers (`timing.extract`, `timing.bind`) read back, once.

A convention typed on both sides drifts: the label infra puts on a namespace and the label
the linker looks for, the annotation a fact is written to and the one it is read from, the
preStop action the drain is carried by. Each lives here, and both sides import it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lockstep.timing import limits as L

if TYPE_CHECKING:
    from lockstep.timing.model import HeartbeatService, Service, Shutdown

# ---- lockstep.dev/* facts on workloads ---------------------------------------------------------
ANNOTATION = "lockstep.dev/"
APP_ANNOTATIONS = {"warmup_s": "warmup-seconds", "max_request_s": "max-request-seconds",
                   "max_recovery_s": "max-recovery-seconds", "keepalive_s": "keepalive-seconds",
                   "catch_up_s": "catch-up-seconds"}
# An app's gRPC clients and its connection pools (`grpc-keepalive-fits-path`,
# `pool-retires-before-path`) are code and client configuration no manifest states: one
# annotation per GrpcServing field, and one per pool (`pool.<name>`) holding `key=seconds`
# pairs. Infra writes them from the stack; audit reads them back.
GRPC_ANNOTATIONS = {"client_keepalive_s": "grpc-client-keepalive-seconds",
                    "permit_keepalive_s": "grpc-permit-keepalive-seconds",
                    "max_silence_s": "grpc-max-silence-seconds", "path_idle_s": "grpc-path-idle-seconds"}
POOL_ANNOTATION = "pool."
POOL_KEYS = {"max_lifetime_s": "max-lifetime-seconds", "keepalive_s": "keepalive-seconds",
             "path_idle_s": "path-idle-seconds", "server_idle_s": "server-idle-seconds"}
FINISH_ANNOTATION = "finish-seconds"
DRAIN_ANNOTATION = "drain-seconds"  # what a preStop command that is not a sleep takes (audit)
ACCEPT_ANNOTATION = "accept"
# A DaemonSet's pod count is the number of nodes it runs on, which no manifest states: this
# annotation states it (what a stack config's `replicas` is for a DaemonSet). Without it the
# rules that need the count are skipped, naming it.
NODES_ANNOTATION = "nodes"

# ---- the AWS Load Balancer Controller's readiness gate ------------------------------------------
# The webhook injects the gate into pods of a namespace carrying this label (LBC docs, "Pod
# readiness gate"); the condition type is this prefix + the TargetGroupBinding's name.
GATE_LABEL = ("elbv2.k8s.aws/pod-readiness-gate-inject", "enabled")
GATE_CONDITION = "target-health.elbv2.k8s.aws/"
# Labels the controller puts on the TargetGroupBindings it manages for an Ingress or Service.
MANAGED_TGB_LABELS = ("ingress.k8s.aws/stack", "service.k8s.aws/stack")

# ---- the offline render's stand-ins --------------------------------------------------------------
# Values the cloud would assign end in this suffix in `lockstep render` output.
MOCK_SUFFIX = "rendered-offline"


def rendered_id(name: str) -> str:
    return f"{name}-{MOCK_SUFFIX}"


def rendered_arn(name: str) -> str:
    return f"arn:aws:mock:::{name}/{MOCK_SUFFIX}"


# ---- pod labels ----------------------------------------------------------------------------------
def name_labels(name: str, extra: dict[str, str], name_label: bool) -> dict[str, str]:
    """The labels of a workload's pods: `app.kubernetes.io/name=<name>` (the selector infra
    deploys) unless the extra labels are already the pods' complete set."""
    if not name_label:
        return dict(extra)
    return {"app.kubernetes.io/name": name, **extra}


def fact_annotations(svc: Service | HeartbeatService) -> dict[str, str]:
    """What no manifest states, as the annotations `timing.extract.annotations` reads back:
    `infra` writes them on every workload so the policy pack and the audit can decide the
    rules that need them instead of reporting them skipped. The heartbeat service states only
    its warm-up and finish time."""
    from lockstep.timing.model import HeartbeatService
    from lockstep.timing.workloads import WORKLOAD_KINDS

    if isinstance(svc, HeartbeatService):
        app, accepted = {"warmup_s": svc.warmup_s}, ()
    else:
        app, accepted = svc.app.model_dump(), svc.accept
    out = {ANNOTATION + name: str(app[f]) for f, name in APP_ANNOTATIONS.items()
           if app.get(f) is not None}
    if svc.shutdown.finish_s is not None:
        out[ANNOTATION + FINISH_ANNOTATION] = str(svc.shutdown.finish_s)
    if not isinstance(svc, HeartbeatService) and svc.replicas is not None and \
            WORKLOAD_KINDS[svc.kind].count_may_be_unknown:
        out[ANNOTATION + NODES_ANNOTATION] = str(svc.replicas)
    if accepted:
        out[ANNOTATION + ACCEPT_ANNOTATION] = ",".join(a.id for a in accepted)
    if not isinstance(svc, HeartbeatService):
        if svc.grpc is not None:
            grpc = svc.grpc.model_dump()
            out.update({ANNOTATION + name: str(grpc[f]) for f, name in GRPC_ANNOTATIONS.items()
                        if grpc[f] is not None})
        for pool in svc.pools:
            stated = pool.model_dump()
            out[ANNOTATION + POOL_ANNOTATION + pool.name] = ",".join(
                f"{key}={stated[f]}" for f, key in POOL_KEYS.items() if stated[f] is not None)
    return out


# ---- the preStop hook that carries the drain --------------------------------------------------------
def prestop_action(shutdown: Shutdown, kubernetes_version: str) -> str:
    """The preStop handler that carries the drain: "sleep" (the kubelet's native action),
    "exec" (`sleep N` in the container) or "none"; `timing.extract.kube.prestop` reads it back.

    A zero drain needs no hook at all, whatever `shutdown.prestop` asks (older kubelets reject a
    zero-second sleep action, and `exec sleep 0` only adds a failure mode). Otherwise
    `shutdown.prestop` wins when set, else the native action on clusters that have it
    (`limits.NATIVE_SLEEP_SINCE`): an exec sleep needs a sleep binary, and on distroless images
    its absence silently turns the drain into 0."""
    from lockstep.timing.context import parse_version

    if shutdown.drain_s == 0:
        return "none"
    if shutdown.prestop is not None:
        return shutdown.prestop
    return "sleep" if parse_version(kubernetes_version) >= L.NATIVE_SLEEP_SINCE else "exec"
