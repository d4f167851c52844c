"""`HeartbeatService`: the service that blocks traffic per business scope (seed 000).

It reads workloads and pods in the namespaces its specs watch and nothing else; with more
than one replica it elects a leader on its own Lease. Its runtime configuration is
`timing.heartbeat_config.runtime_config(stack)`, the same schema the runtime parses, so the
two ends cannot drift. The broker URL only ever travels as a Pulumi secret into a
Kubernetes Secret, never into the ConfigMap, the environment literal or outputs.
"""

from __future__ import annotations

import hashlib
import posixpath
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from lockstep.infra import kube
from lockstep.timing.conventions import fact_annotations
from lockstep.timing.heartbeat_config import (BROKER_URL_ENV, CONFIG_MOUNT, CONFIG_PATH_ENV, CONFIGMAP_KEY,
                                     SECRET_KEY, runtime_config)
from lockstep.timing.conventions import name_labels
from lockstep.timing.model import Stack

TYPE = "lockstep:infra:HeartbeatService"
rbac = k8s.rbac.v1
READ = ["get", "list", "watch"]


@dataclass(frozen=True)
class HeartbeatServiceArgs:
    """`broker_url`: the secret AMQP URL; `namespace`: the heartbeat's Namespace resource;
    `watched`: Namespace resources of the watched namespaces (Roles wait for them)."""

    stack: Stack
    broker_url: pulumi.Output[str]
    namespace: pulumi.Resource
    watched: dict[str, pulumi.Resource]


class HeartbeatService(pulumi.ComponentResource):
    """Outputs: `deployment`, `service_account`, `config_map`, `secret`, `roles` (one per
    watched namespace, plus the lease Role when replicas > 1), `pdb` (or None)."""

    deployment: k8s.apps.v1.Deployment
    service_account: k8s.core.v1.ServiceAccount
    config_map: k8s.core.v1.ConfigMap
    secret: k8s.core.v1.Secret
    roles: list[rbac.Role]
    pdb: k8s.policy.v1.PodDisruptionBudget | None

    def __init__(self, name: str, args: HeartbeatServiceArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, None, opts)
        hb = args.stack.heartbeat
        if hb is None:
            raise ValueError("the stack declares no heartbeat service")
        rc = runtime_config(args.stack)
        ns = hb.namespace
        # The same labelling convention as every service, so one selector rule holds.
        labels = name_labels(hb.name, {}, name_label=True)
        child = pulumi.ResourceOptions(parent=self, depends_on=[args.namespace])

        self.service_account = k8s.core.v1.ServiceAccount(
            f"{name}-sa", metadata=kube.metadata(hb.name, ns, labels), opts=child)
        self.roles = [self._reader(name, watched, hb.name, ns, labels,
                                   pulumi.ResourceOptions(parent=self,
                                                          depends_on=[args.watched[watched]]))
                      for watched in rc.namespaces]
        if hb.replicas > 1:
            self.roles.append(self._lease(name, rc.lease.name, hb.name, ns, labels, child))
        config_json = rc.model_dump_json(indent=2)
        self.config_map = k8s.core.v1.ConfigMap(
            f"{name}-config", metadata=kube.metadata(f"{hb.name}-config", ns, labels),
            data={CONFIGMAP_KEY: config_json}, opts=child)
        self.secret = k8s.core.v1.Secret(
            f"{name}-broker", metadata=kube.metadata(f"{hb.name}-broker", ns, labels),
            type="Opaque",
            # `string_data` from a secret Output stays encrypted in state and is never shown.
            string_data={SECRET_KEY: pulumi.Output.secret(args.broker_url)}, opts=child)
        self.deployment = self._deployment(name, args.stack, labels, config_json, pulumi.ResourceOptions(
            parent=self, depends_on=[args.namespace, self.config_map, self.secret,
                                     self.service_account, *self.roles]))
        self.pdb = (k8s.policy.v1.PodDisruptionBudget(
            f"{name}-pdb", metadata=kube.metadata(hb.name, ns, labels),
            spec=kube.pdb_spec(hb.pdb, labels), opts=child) if hb.pdb is not None else None)
        self.register_outputs({"deployment": self.deployment.metadata.name,
                               "config_map": self.config_map.metadata.name})

    def _bind(self, name: str, role: rbac.Role, role_name: str, namespace: str, sa: str,
              sa_namespace: str, labels: dict[str, str], opts: pulumi.ResourceOptions) -> None:
        rbac.RoleBinding(
            name, metadata=kube.metadata(role_name, namespace, labels),
            role_ref=rbac.RoleRefArgs(api_group="rbac.authorization.k8s.io", kind="Role",
                                      name=role_name),
            subjects=[rbac.SubjectArgs(kind="ServiceAccount", name=sa, namespace=sa_namespace)],
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[role])))

    def _reader(self, name: str, watched: str, sa: str, sa_namespace: str,
                labels: dict[str, str], opts: pulumi.ResourceOptions) -> rbac.Role:
        """Read-only access to the workloads and pods it judges; a namespaced Role, not a
        ClusterRole, so a new namespace is visible only when a spec watches it."""
        role_name = f"{sa}-reader"
        role = rbac.Role(
            f"{name}-reader-{watched}", metadata=kube.metadata(role_name, watched, labels),
            rules=[rbac.PolicyRuleArgs(api_groups=["apps"], resources=["deployments", "statefulsets"],
                                       verbs=READ),
                   rbac.PolicyRuleArgs(api_groups=[""], resources=["pods"], verbs=READ)],
            opts=opts)
        self._bind(f"{name}-reader-{watched}-binding", role, role_name, watched, sa, sa_namespace,
                   labels, opts)
        return role

    def _lease(self, name: str, lease: str, sa: str, ns: str, labels: dict[str, str],
               opts: pulumi.ResourceOptions) -> rbac.Role:
        """Leader election on its own Lease only. RBAC cannot restrict `create` by name (the
        name is not known when a create is authorised), so create is a separate rule."""
        role_name = f"{sa}-leader"
        role = rbac.Role(
            f"{name}-leader", metadata=kube.metadata(role_name, ns, labels),
            rules=[rbac.PolicyRuleArgs(api_groups=["coordination.k8s.io"], resources=["leases"],
                                       resource_names=[lease], verbs=["get", "update"]),
                   rbac.PolicyRuleArgs(api_groups=["coordination.k8s.io"], resources=["leases"],
                                       verbs=["create"])],
            opts=opts)
        self._bind(f"{name}-leader-binding", role, role_name, ns, sa, ns, labels, opts)
        return role

    def _deployment(self, name: str, stack: Stack, labels: dict[str, str], config_json: str,
                    opts: pulumi.ResourceOptions) -> k8s.apps.v1.Deployment:
        hb = stack.heartbeat
        assert hb is not None
        core = k8s.core.v1
        volumes, mounts = kube.scratch(hb.hardening)
        config_dir, config_file = posixpath.split(CONFIG_MOUNT)
        container = core.ContainerArgs(
            name=hb.name, image=hb.image,
            command=["lockstep", "heartbeat", "--config", CONFIG_MOUNT],
            ports=[core.ContainerPortArgs(name="http", container_port=hb.port, protocol="TCP")],
            env=[core.EnvVarArgs(name=CONFIG_PATH_ENV, value=CONFIG_MOUNT),
                 # The leader-election identity the runtime reads (heartbeat/runtime.py).
                 core.EnvVarArgs(name="POD_NAME", value_from=core.EnvVarSourceArgs(
                     field_ref=core.ObjectFieldSelectorArgs(field_path="metadata.name"))),
                 core.EnvVarArgs(name=BROKER_URL_ENV, value_from=core.EnvVarSourceArgs(
                     secret_key_ref=core.SecretKeySelectorArgs(name=self.secret.metadata.name,
                                                               key=SECRET_KEY)))],
            startup_probe=kube.probe(hb.probes.startup),
            readiness_probe=kube.probe(hb.probes.readiness),
            liveness_probe=kube.probe(hb.probes.liveness),
            lifecycle=kube.lifecycle(hb.shutdown, stack.kubernetes_version),
            resources=kube.resources(hb.resources),
            security_context=kube.security_context(hb.hardening),
            volume_mounts=[core.VolumeMountArgs(name="config", mount_path=config_dir,
                                                read_only=True), *mounts])
        # A changed spec must roll the pods: the checksum annotation changes with the config.
        checksum = hashlib.sha256(config_json.encode()).hexdigest()
        template = core.PodTemplateSpecArgs(
            metadata=k8s.meta.v1.ObjectMetaArgs(labels=labels,
                                                annotations={"lockstep.dev/config-sha256": checksum}),
            spec=core.PodSpecArgs(
                service_account_name=self.service_account.metadata.name,
                containers=[container],
                volumes=[core.VolumeArgs(name="config", config_map=core.ConfigMapVolumeSourceArgs(
                    name=self.config_map.metadata.name,
                    items=[core.KeyToPathArgs(key=CONFIGMAP_KEY, path=config_file)])), *volumes],
                termination_grace_period_seconds=hb.shutdown.grace_s))
        return k8s.apps.v1.Deployment(
            f"{name}-deployment", metadata=kube.metadata(hb.name, hb.namespace, labels,
                                                         fact_annotations(hb)),
            spec=k8s.apps.v1.DeploymentSpecArgs(
                replicas=hb.replicas,
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels=kube.selector_labels(labels)),
                template=template, strategy=kube.deployment_strategy(hb.rollout),
                min_ready_seconds=hb.min_ready_s,
                progress_deadline_seconds=hb.rollout.progress_deadline_s),
            opts=opts)
