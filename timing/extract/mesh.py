"""A pod's mesh proxy as its resources state it: whether Istio or Linkerd injects one, and the
numbers that decide its hop (`timing.hopkinds`). The keys are the meshes' own; `lockstep
render` writes the same ones (`pod_metadata`), so a rendered stack reads back as it was declared.

Injection (Istio's "Installing the Sidecar" page, "Controlling the injection policy"; the
`linkerd.io/inject` reference):
- Istio: the pod's `sidecar.istio.io/inject` label ("true"/"false"; the older annotation of
  the same name is honoured too) and the namespace's `istio-injection` label
  ("enabled"/"disabled") or `istio.io/rev` label. Either one saying no wins; else either
  saying yes injects; neither says: no sidecar (the webhook's `enableNamespacesByDefault` is
  off unless the installation turns it on).
- Linkerd: the `linkerd.io/inject` annotation ("enabled", "ingress"; "disabled" opts out), the
  pod's over its namespace's.

The numbers:
- Istio's drain is ProxyConfig `terminationDrainDuration`: the pod's `proxy.istio.io/config`
  annotation (ProxyConfig as YAML), else the mesh-wide `defaultConfig` of the `istio`
  ConfigMap's `mesh` key in `istio-system`, else the kind's default. (The ProxyConfig custom
  resource holds only concurrency, environment variables and the image: not the drain.)
- Istio's pool idle toward the app is a DestinationRule's
  `trafficPolicy.connectionPool.http.idleTimeout` for the Service's host (the linker finds it).
- Linkerd's drain is `config.alpha.linkerd.io/proxy-wait-before-exit-seconds` (whole seconds),
  the pod's over its namespace's.
A number none of these states is the kind's default, reported as applied (`Hop.defaulted`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import yaml

from lockstep.timing.extract.nodes import FieldError, duration_s, whole_s
from lockstep.timing.extract.values import get

ISTIO_INJECT = "sidecar.istio.io/inject"
ISTIO_NAMESPACE_LABEL = "istio-injection"
ISTIO_REVISION_LABEL = "istio.io/rev"
ISTIO_PROXY_CONFIG = "proxy.istio.io/config"
ISTIO_MESH_CONFIG = ("istio-system", "istio", "mesh")  # namespace, ConfigMap, key
LINKERD_INJECT = "linkerd.io/inject"
LINKERD_WAIT = "config.alpha.linkerd.io/proxy-wait-before-exit-seconds"
LINKERD_INJECTS = ("enabled", "ingress")
DESTINATION_RULE_API = "networking.istio.io/v1"  # served since Istio 1.22; v1beta1 before
UNDECIDED_NOTE: Final = (f"not in the input: no mesh proxy assumed for its workloads that say nothing (its "
                         f"{ISTIO_NAMESPACE_LABEL} or {ISTIO_REVISION_LABEL} label, or {LINKERD_INJECT} annotation, decides it)")


def _text(value: Any) -> str | None:
    return None if value is None else str(value).strip().lower()


def injected(pod_labels: Mapping[str, Any], pod_annotations: Mapping[str, Any],
             namespace: Mapping[str, Any] | None) -> tuple[str | None, str]:
    """(the mesh kind injected into these pods or None, "undecided" when the pod says nothing
    and its namespace, which could decide it, is missing from the input)."""
    ns_labels = get(namespace, "metadata", "labels") or {}
    ns_annotations = get(namespace, "metadata", "annotations") or {}
    pod = _text(pod_labels.get(ISTIO_INJECT, pod_annotations.get(ISTIO_INJECT)))
    ns = _text(ns_labels.get(ISTIO_NAMESPACE_LABEL))
    if pod != "false" and ns != "disabled" and (pod == "true" or ns == "enabled" or ISTIO_REVISION_LABEL in ns_labels):
        return "istio-sidecar", ""
    linkerd = _text(pod_annotations.get(LINKERD_INJECT, ns_annotations.get(LINKERD_INJECT)))
    if linkerd in LINKERD_INJECTS:
        return "linkerd-proxy", ""
    return None, ("undecided" if namespace is None and pod is None and linkerd is None else "")


def istio_drain(pod_annotations: Mapping[str, Any]) -> int | None:
    """terminationDrainDuration in whole seconds from the pod's ProxyConfig annotation; None:
    it states none (the mesh-wide default then applies: the annotation is merged over it)."""
    where = f"metadata.annotations.{ISTIO_PROXY_CONFIG}"
    own = _yaml(pod_annotations.get(ISTIO_PROXY_CONFIG), where)
    drain = own.get("terminationDrainDuration") if isinstance(own, dict) else None
    return None if drain is None else duration_s(drain, f"{where}.terminationDrainDuration")


def istio_mesh_drain(mesh_configmap: Mapping[str, Any]) -> int | None:
    """The mesh-wide terminationDrainDuration: `defaultConfig` of the `istio` ConfigMap's mesh config."""
    key = ISTIO_MESH_CONFIG[2]
    mesh = _yaml(get(mesh_configmap, "data", key), f"data.{key}")
    drain = get(mesh, "defaultConfig", "terminationDrainDuration")
    return None if drain is None else duration_s(drain, f"data.{key}.defaultConfig.terminationDrainDuration")


def _yaml(raw: Any, where: str) -> Any:
    if not isinstance(raw, str):  # absent, or a mapping already (a Pulumi input)
        return raw
    try:
        return yaml.safe_load(str(raw))
    except yaml.YAMLError as err:
        raise FieldError(f"{where}: not YAML ({str(err).splitlines()[0]})") from None


def destination_idle(rule: Mapping[str, Any]) -> int | None:
    """A DestinationRule's HTTP pool idle timeout in whole seconds; None: it sets none."""
    raw = get(rule, "spec", "trafficPolicy", "connectionPool", "http", "idleTimeout")
    return None if raw is None else duration_s(raw, "spec.trafficPolicy.connectionPool.http.idleTimeout")


def linkerd_drain(pod_annotations: Mapping[str, Any], namespace: Mapping[str, Any] | None) -> int | None:
    raw = pod_annotations.get(LINKERD_WAIT, (get(namespace, "metadata", "annotations") or {}).get(LINKERD_WAIT))
    return None if raw is None else whole_s(raw, LINKERD_WAIT)


def pod_metadata(kind: str, drain_s: int | None) -> tuple[dict[str, str], dict[str, str]]:
    """(pod labels, pod annotations) that put a pod in `kind`'s mesh with its drain: what
    `lockstep render` writes and `injected` / `istio_drain` / `linkerd_drain` read back."""
    if kind == "istio-sidecar":
        annotations = {} if drain_s is None else {ISTIO_PROXY_CONFIG: f"terminationDrainDuration: {drain_s}s"}
        return {ISTIO_INJECT: "true"}, annotations
    if kind == "linkerd-proxy":
        return {}, {LINKERD_INJECT: "enabled", **({} if drain_s is None else {LINKERD_WAIT: str(drain_s)})}
    return {}, {}
