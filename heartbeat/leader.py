"""Leader election on a `coordination.k8s.io/v1` Lease, so exactly one instance publishes.

Follows client-go's rules: the leader renews every `retry_period`; it steps down when it
could not renew for `renew_deadline`; a candidate takes the lease over only after the
record has not changed for `lease_duration` as measured on *its own* monotonic clock (so
clock skew between nodes does not matter). Updates carry the Lease's `resourceVersion`,
so two candidates racing for an expired lease cannot both win (the loser gets 409).

Election runs even with one replica: a rolling update of the heartbeat itself (surge 1)
briefly runs two pods, and only one may publish.

The Lease also carries the set of blocked scopes (annotation `BLOCKED_ANNOTATION`), written
before block commands are published: a new leader restores it, re-sends the full state to
the gateway, and keeps those scopes blocked until they recover under its own eyes.
"""

from __future__ import annotations

import json
import logging
import time
from datetime import datetime, timezone
from typing import Any, Callable

from lockstep.timing.heartbeat_config import LeaseConfig

log = logging.getLogger("heartbeat.leader")
BLOCKED_ANNOTATION = "lockstep.dev/blocked-scopes"


def lease_expired(observed_at: float, now: float, duration_s: int) -> bool:
    """A record unchanged for a whole lease duration (on our clock) is free to take."""
    return now - observed_at >= duration_s


def parse_blocked(annotations: dict[str, str] | None) -> frozenset[str]:
    raw = (annotations or {}).get(BLOCKED_ANNOTATION)
    if not raw:
        return frozenset()
    try:
        names = json.loads(raw)
    except ValueError:
        log.warning("unreadable blocked-scopes annotation on the lease", extra={"event": "lease_annotation_bad"})
        return frozenset()
    return frozenset(str(n) for n in names) if isinstance(names, list) else frozenset()


class LeaderElector:
    def __init__(self, api: Any, cfg: LeaseConfig, identity: str, *,
                 mono: Callable[[], float] = time.monotonic,
                 wall: Callable[[], datetime] = lambda: datetime.now(timezone.utc)) -> None:
        self.api = api  # kubernetes.client.CoordinationV1Api
        self.cfg = cfg
        self.identity = identity
        self.mono = mono
        self.wall = wall
        self.is_leader = False
        self.restored_blocked: frozenset[str] = frozenset()
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self._last_renew = 0.0
        self._next_try = 0.0

    # -- Kubernetes calls ------------------------------------------------------------------
    def _read(self) -> Any | None:
        from kubernetes.client.exceptions import ApiException

        try:
            return self.api.read_namespaced_lease(self.cfg.name, self.cfg.namespace,
                                                  _request_timeout=self._timeout())
        except ApiException as err:
            if err.status == 404:
                return None
            raise

    def _timeout(self) -> tuple[float, float]:
        t = float(self.cfg.retry_period_s)
        return (t, t)

    def _create(self, blocked: frozenset[str]) -> Any:
        from kubernetes import client

        now = self.wall()
        body = client.V1Lease(
            metadata=client.V1ObjectMeta(name=self.cfg.name, namespace=self.cfg.namespace,
                                         annotations={BLOCKED_ANNOTATION: json.dumps(sorted(blocked))}),
            spec=client.V1LeaseSpec(holder_identity=self.identity, lease_duration_seconds=self.cfg.duration_s,
                                    acquire_time=now, renew_time=now, lease_transitions=0))
        return self.api.create_namespaced_lease(self.cfg.namespace, body, _request_timeout=self._timeout())

    def _replace(self, lease: Any) -> Any:
        return self.api.replace_namespaced_lease(self.cfg.name, self.cfg.namespace, lease,
                                                 _request_timeout=self._timeout())

    # -- the election ----------------------------------------------------------------------
    def tick(self) -> bool:
        """Try to acquire or renew when due; True while this instance leads."""
        now = self.mono()
        if self.is_leader and now - self._last_renew > self.cfg.renew_deadline_s:
            self._step_down("could not renew within renew_deadline")
        if now < self._next_try:
            return self.is_leader
        self._next_try = now + self.cfg.retry_period_s
        try:
            self._try(now)
        except Exception as err:  # API trouble: keep leading until the renew deadline passes
            log.warning("lease update failed", extra={"event": "lease_error", "problem": str(err)[:200]})
        return self.is_leader

    def _try(self, now: float) -> None:
        lease = self._read()
        if lease is None:
            self._create(frozenset())
            self._became_leader(now, frozenset())
            return
        spec = lease.spec
        record = (spec.holder_identity, spec.renew_time, lease.metadata.resource_version)
        if record != self._observed:
            self._observed, self._observed_at = record, now
        holder = spec.holder_identity or ""
        if holder == self.identity:
            spec.renew_time = self.wall()
            spec.lease_duration_seconds = self.cfg.duration_s
            self._replace(lease)
            if not self.is_leader:  # e.g. restarted with the same identity
                self._became_leader(now, parse_blocked(lease.metadata.annotations))
            self._last_renew = now
            return
        if self.is_leader:
            self._step_down(f"lease held by {holder}")
        if holder and not lease_expired(self._observed_at, now, spec.lease_duration_seconds or self.cfg.duration_s):
            return
        wall = self.wall()
        spec.holder_identity = self.identity
        spec.acquire_time = wall
        spec.renew_time = wall
        spec.lease_duration_seconds = self.cfg.duration_s
        spec.lease_transitions = (spec.lease_transitions or 0) + 1
        self._replace(lease)  # 409 if another candidate won the race
        self._became_leader(now, parse_blocked(lease.metadata.annotations))

    def _became_leader(self, now: float, blocked: frozenset[str]) -> None:
        self.is_leader = True
        self._last_renew = now
        self.restored_blocked = blocked
        log.info("became leader", extra={"event": "leader_acquired", "identity": self.identity,
                                         "restored_blocked": sorted(blocked)})

    def _step_down(self, why: str) -> None:
        self.is_leader = False
        log.warning("lost leadership", extra={"event": "leader_lost", "problem": why})

    def save_blocked(self, blocked: frozenset[str]) -> bool:
        """Record the decided blocked scopes on the lease (before their commands go out)."""
        if not self.is_leader:
            return False
        try:
            lease = self._read()
            if lease is None or lease.spec.holder_identity != self.identity:
                self._step_down("lease lost while saving state")
                return False
            lease.metadata.annotations = dict(lease.metadata.annotations or {})
            lease.metadata.annotations[BLOCKED_ANNOTATION] = json.dumps(sorted(blocked))
            lease.spec.renew_time = self.wall()
            self._replace(lease)
            self._last_renew = self.mono()
            return True
        except Exception as err:
            log.warning("could not save blocked scopes on the lease",
                        extra={"event": "lease_error", "problem": str(err)[:200]})
            return False

    def release(self) -> None:
        """On shutdown: hand the lease over at once instead of after its duration."""
        if not self.is_leader:
            return
        try:
            lease = self._read()
            if lease is not None and lease.spec.holder_identity == self.identity:
                lease.spec.holder_identity = None
                lease.spec.lease_duration_seconds = 1
                lease.spec.renew_time = self.wall()
                self._replace(lease)
        except Exception as err:
            log.warning("could not release the lease", extra={"event": "lease_error", "problem": str(err)[:200]})
        self.is_leader = False
