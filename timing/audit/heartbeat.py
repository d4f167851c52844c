"""The heartbeat's ConfigMap (what `HeartbeatService` deploys) → the stack-scope heartbeat rules.

The ConfigMap holds the heartbeat's intervals and, per spec, the workload it watches; the
heartbeat's own Deployment gives its probes and drain, the watched workloads their subjects.
A stack is assembled from those pieces only (no watchdog, no failover: no manifest holds
them) and the registry's stack-scope rules run on it.
"""

from __future__ import annotations

from dataclasses import dataclass

from timing import extract as X
from timing.audit.graph import Index, Subject, dig, name, namespace, ref
from timing.audit.reader import Doc
from timing.heartbeat_config import CONFIGMAP_KEY
from timing.context import Ctx, Scene


@dataclass
class Heartbeat:
    configmap: Doc
    scene: Scene
    notes: list[str]


def heartbeats(idx: Index, subjects: list[Subject], ctx: Ctx) -> tuple[list[Heartbeat], list[str]]:
    """Every ConfigMap carrying `heartbeat.json`, as a stack; problems as one line each."""
    found, problems = [], []
    by_workload = {}
    for s in subjects:
        by_workload.setdefault((s.service.namespace, s.service.name), s.service)
    for cm in idx.all("ConfigMap"):
        if not isinstance(dig(cm.obj, "data", CONFIGMAP_KEY), str):
            continue
        try:
            config = X.heartbeat_config(cm.obj)
            deployment = next((d for d in idx.of("Deployment", config.lease.namespace)
                               if name(d) == config.service), None)
            hb = X.heartbeat_service(config, deployment.obj if deployment else None)
            specs = X.heartbeat_specs(config)
        except (X.ExtractError, ValueError) as err:
            problems.append(f"{cm.where}: {ref(cm)}: {err}")
            continue
        notes = [] if deployment else [f"Deployment {config.lease.namespace}/{config.service} not in the "
                                       "input: the heartbeat's own probes and drain are unknown"]
        kept, services = [], {}
        for spec, cfg in zip(specs, config.specs):
            svc = by_workload.get((cfg.workload.namespace, cfg.workload.name))
            if svc is None:
                notes.append(f"spec {spec.name}: watched {cfg.workload.kind} {cfg.workload.namespace}/"
                             f"{cfg.workload.name} not in the input: not judged")
                continue
            kept.append(spec)
            services[svc.name] = svc
        scene = Scene(services=tuple(services.values()), heartbeat=hb, heartbeat_specs=tuple(kept))
        found.append(Heartbeat(cm, scene, notes))
    return found, problems


def where(hb: Heartbeat) -> tuple[str, int]:
    from timing.audit.reader import line_of

    return hb.configmap.file, line_of(hb.configmap.obj, ("data", CONFIGMAP_KEY)) or hb.configmap.line


def key(hb: Heartbeat) -> str:
    return f"{namespace(hb.configmap)}/ConfigMap/{name(hb.configmap)} (heartbeat)"
