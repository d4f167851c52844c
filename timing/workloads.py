"""What differs between workload kinds, as data: one `WorkloadKind` per kind.

Code asks the table (`WORKLOAD_KINDS[svc.kind]`) instead of comparing kind names, as
`timing.lbkinds` does for load balancers. Adding a kind is a row here, its reader
(`timing.extract.kube`) and its renderer (`infra/workload.py`).

Sources, per value:
- Deployment: `maxSurge`/`maxUnavailable` default to 25% each; a percentage surge rounds
  up, a percentage unavailability down; both rounding to 0 pods makes the controller take 1
  down (`ResolveFenceposts`, kubernetes/pkg/controller/deployment/util); the API rejects both
  set to 0; `progressDeadlineSeconds` exists for Deployments only.
- StatefulSet (OrderedReady, as infra deploys it): one pod at a time, the old one gone
  before its successor is scheduled.
- DaemonSet (apps/v1 `RollingUpdateDaemonSet`): one pod per eligible node, so its pod count
  is the node count, which no manifest states; `maxUnavailable` defaults to 1 and `maxSurge`
  to 0 (`limits.DAEMONSET_ROLLOUT_DEFAULTS`); a percentage of either is taken of the nodes
  that should run the pod and rounded up; the two may not both be 0; `updateStrategy:
  OnDelete` replaces a pod only when someone deletes it. When both bounds come to 0 pods the
  DaemonSet controller, too, takes 1 down (`updatedDesiredNodeCounts`,
  kubernetes/pkg/controller/daemon/update.go). An HPA scales through the scale subresource,
  which a DaemonSet does not have.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Mapping

from lockstep.timing import limits as L


@dataclass(frozen=True, slots=True)
class WorkloadKind:
    name: str
    in_place: bool  # pods are replaced one at a time, the old gone before its successor starts
    unavailable_round_up: bool  # a percentage maxUnavailable rounds up (else down)
    fencepost: bool  # both bounds rounding to 0 pods: the controller takes 1 down
    zero_pace_rejected: bool  # the API rejects maxSurge and maxUnavailable both 0
    progress_deadline: bool  # has progressDeadlineSeconds
    scalable: bool  # has a scale subresource: an HPA may own the count
    count_may_be_unknown: bool  # no manifest states the pod count (a DaemonSet's node count)
    update_strategies: tuple[str, ...]  # the update strategies the model holds, the first the default
    rollout_defaults: Mapping[str, int | str]  # rollout fields whose default is not the Deployment's
    heartbeat_watches: bool  # the heartbeat service reads this kind's status (heartbeat_config.WatchedWorkload)
    strategy_key: str  # the manifest key under `spec` that holds the update strategy


WORKLOAD_KINDS: Final[Mapping[str, WorkloadKind]] = {
    "Deployment": WorkloadKind(
        "Deployment", in_place=False, unavailable_round_up=False, fencepost=True, zero_pace_rejected=True,
        progress_deadline=True, scalable=True, count_may_be_unknown=False,
        update_strategies=("RollingUpdate",), rollout_defaults={}, heartbeat_watches=True, strategy_key="strategy"),
    "StatefulSet": WorkloadKind(
        "StatefulSet", in_place=True, unavailable_round_up=False, fencepost=False, zero_pace_rejected=False,
        progress_deadline=False, scalable=True, count_may_be_unknown=False,
        update_strategies=("RollingUpdate",), rollout_defaults={}, heartbeat_watches=True,
        strategy_key="updateStrategy"),
    "DaemonSet": WorkloadKind(
        "DaemonSet", in_place=False, unavailable_round_up=True, fencepost=True, zero_pace_rejected=True,
        progress_deadline=False, scalable=False, count_may_be_unknown=True,
        update_strategies=("RollingUpdate", "OnDelete"), rollout_defaults=L.DAEMONSET_ROLLOUT_DEFAULTS,
        heartbeat_watches=False, strategy_key="updateStrategy"),
}
