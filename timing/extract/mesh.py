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
- Whether the app waits for the proxy (`app_waits`): Istio's ProxyConfig
  `holdApplicationUntilProxyStarts` (pod annotation over the mesh-wide default, as the drain),
  or the pod's `sidecar.istio.io/nativeSidecar` annotation; with neither saying so and no
  `nativeSidecar: "false"`, istiod's native-sidecar mode decides, which no input here states:
  unknown. Linkerd's `config.linkerd.io/proxy-await` ("enabled"/"disabled"), the pod's over its
  namespace's.
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
ISTIO_NATIVE = "sidecar.istio.io/nativeSidecar"
ISTIO_HOLD = "holdApplicationUntilProxyStarts"
LINKERD_AWAIT = "config.linkerd.io/proxy-await"
LINKERD_AWAITS = {"enabled": True, "disabled": False}
# Where a DestinationRule sets its HTTP pool's idle timeout (Istio's 1 h when it does not).
DESTINATION_IDLE: Final = ("spec", "trafficPolicy", "connectionPool", "http", "idleTimeout")
DESTINATION_RULE_API = "networking.istio.io/v1"  # served since Istio 1.22; v1beta1 before
# Istio names a Kubernetes Service `<name>.<namespace>.svc.cluster.local` in its registry. A host
# written in a DestinationRule or a VirtualService route is resolved by istiod's
# ResolveShortnameToFQDN (pkg/config/model.go): only a name with no dot gets the rule's own
# namespace and `.svc.<domain>` appended; one with a dot (`api.web`) is taken as written and so
# matches no Service unless it is the full name; `*` and IP addresses are left as they are. (The
# DestinationRule reference says short names are read relative to the rule's namespace; the
# code is what decides the dotted forms.)
CLUSTER_DOMAIN: Final = "svc.cluster.local"


def service_host(name: str, namespace: str) -> str:
    """A Service's host name in Istio's registry."""
    return f"{name}.{namespace}.{CLUSTER_DOMAIN}"


def istio_host(host: str, namespace: str) -> str:
    """A host named in an Istio resource of `namespace`, as istiod resolves it."""
    return host if "." in host or host == "*" or ":" in host else service_host(host, namespace)


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
    own = embedded_yaml(pod_annotations.get(ISTIO_PROXY_CONFIG), where)
    drain = own.get("terminationDrainDuration") if isinstance(own, dict) else None
    return None if drain is None else duration_s(drain, f"{where}.terminationDrainDuration")


def istio_mesh_drain(mesh_configmap: Mapping[str, Any]) -> int | None:
    """The mesh-wide terminationDrainDuration: `defaultConfig` of the `istio` ConfigMap's mesh config."""
    key = ISTIO_MESH_CONFIG[2]
    mesh = embedded_yaml(get(mesh_configmap, "data", key), f"data.{key}")
    drain = get(mesh, "defaultConfig", "terminationDrainDuration")
    return None if drain is None else duration_s(drain, f"data.{key}.defaultConfig.terminationDrainDuration")


def _flag(value: Any, where: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise FieldError(f"{where}: expected true or false, got {value!r}")


def istio_app_waits(pod_annotations: Mapping[str, Any], mesh_configmap: Mapping[str, Any] | None
                    ) -> bool | None:
    """Whether the sidecar holds the app back until it is ready: a native sidecar, or ProxyConfig
    `holdApplicationUntilProxyStarts` (the pod's over the mesh-wide default, off unless set);
    None where istiod's native-sidecar mode would decide."""
    where = f"metadata.annotations.{ISTIO_PROXY_CONFIG}"
    own = embedded_yaml(pod_annotations.get(ISTIO_PROXY_CONFIG), where)
    hold = _flag(own.get(ISTIO_HOLD) if isinstance(own, dict) else None, f"{where}.{ISTIO_HOLD}")
    if hold is None and mesh_configmap is not None:
        key = ISTIO_MESH_CONFIG[2]
        mesh = embedded_yaml(get(mesh_configmap, "data", key), f"data.{key}")
        hold = _flag(get(mesh, "defaultConfig", ISTIO_HOLD), f"data.{key}.defaultConfig.{ISTIO_HOLD}")
    native = _text(pod_annotations.get(ISTIO_NATIVE))
    if native not in (None, "true", "false"):
        raise FieldError(f"metadata.annotations.{ISTIO_NATIVE}: expected \"true\" or \"false\", got "
                         f"{pod_annotations[ISTIO_NATIVE]!r}")
    if native == "true" or hold is True:
        return True
    return False if native == "false" else None


def linkerd_app_waits(pod_annotations: Mapping[str, Any], namespace: Mapping[str, Any] | None) -> bool | None:
    """`config.linkerd.io/proxy-await`, the pod's over its namespace's; None: neither states it."""
    raw = pod_annotations.get(LINKERD_AWAIT, (get(namespace, "metadata", "annotations") or {}).get(LINKERD_AWAIT))
    if raw is None:
        return None
    if _text(raw) not in LINKERD_AWAITS:
        raise FieldError(f"{LINKERD_AWAIT}: expected enabled or disabled, got {raw!r}")
    return LINKERD_AWAITS[_text(raw)]


def embedded_yaml(raw: Any, where: str) -> Any:
    """A setting written as YAML inside a string (a ProxyConfig annotation, the mesh config)."""
    if not isinstance(raw, str):  # absent, or a mapping already (a Pulumi input)
        return raw
    try:
        return yaml.safe_load(str(raw))
    except yaml.YAMLError as err:
        raise FieldError(f"{where}: not YAML ({str(err).splitlines()[0]})") from None


def destination_idle(rule: Mapping[str, Any]) -> int | None:
    """A DestinationRule's HTTP pool idle timeout in whole seconds; None: it sets none."""
    raw = get(rule, *DESTINATION_IDLE)
    return None if raw is None else duration_s(raw, ".".join(DESTINATION_IDLE))


def linkerd_drain(pod_annotations: Mapping[str, Any], namespace: Mapping[str, Any] | None) -> int | None:
    raw = pod_annotations.get(LINKERD_WAIT, (get(namespace, "metadata", "annotations") or {}).get(LINKERD_WAIT))
    return None if raw is None else whole_s(raw, LINKERD_WAIT)


def pod_metadata(kind: str, drain_s: int | None, app_waits: bool | None = None
                 ) -> tuple[dict[str, str], dict[str, str]]:
    """(pod labels, pod annotations) that put a pod in `kind`'s mesh with its drain and start
    order (None: not written): what `lockstep render` writes and `injected`, `istio_drain`,
    `istio_app_waits`, `linkerd_drain` and `linkerd_app_waits` read back."""
    if kind == "istio-sidecar":
        config = ([] if drain_s is None else [f"terminationDrainDuration: {drain_s}s"]) + (
            [] if app_waits is None else [f"{ISTIO_HOLD}: {str(app_waits).lower()}"])
        # off is written as a classic sidecar too: istiod's native mode would otherwise hold the app
        native = {} if app_waits is not False else {ISTIO_NATIVE: "false"}
        return {ISTIO_INJECT: "true"}, {**({ISTIO_PROXY_CONFIG: "\n".join(config)} if config else {}), **native}
    if kind == "linkerd-proxy":
        await_ = {} if app_waits is None else {LINKERD_AWAIT: "enabled" if app_waits else "disabled"}
        return {}, {LINKERD_INJECT: "enabled", **({} if drain_s is None else {LINKERD_WAIT: str(drain_s)}), **await_}
    return {}, {}
