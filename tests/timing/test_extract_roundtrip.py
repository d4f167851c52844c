"""Extraction gives back the model's numbers: random valid model pieces are rendered the way
Kubernetes manifests and pulumi-aws inputs spell them (numbers sometimes as floats, as the
engine hands them over), extracted, and compared."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lockstep.timing import conventions
from lockstep.timing import extract as x
from lockstep.timing import limits as L
from lockstep.timing.config import read_stack_file
from lockstep.timing.invariants.kube import pod_labels
from lockstep.timing.model import (
    AppFacts, Exec, Grpc, HealthCheck, Hpa, HttpGet, LoadBalancer, Pdb, Probe, Rollout, Service,
    Shutdown, TcpSocket,
)


def ints(r: L.Range) -> st.SearchStrategy[int]:
    return st.integers(r.lo, min(r.hi, r.lo + 5000))


def maybe_float(n: int) -> st.SearchStrategy[int | float]:
    return st.sampled_from([n, float(n)])


percent = st.integers(0, 100).map(lambda p: f"{p}%")
ports = ints(L.PORT)
handlers = st.one_of(
    st.builds(HttpGet, path=st.sampled_from(["/", "/hc/ready"]), port=ports,
              scheme=st.sampled_from(["HTTP", "HTTPS"])).map(lambda h: {"http_get": h}),
    st.builds(TcpSocket, port=ports).map(lambda h: {"tcp_socket": h}),
    st.builds(Grpc, port=ports).map(lambda h: {"grpc": h}),
    st.builds(Exec, command=st.just(("check", "--ready"))).map(lambda h: {"exec": h}),
)


@st.composite
def probes_(draw: st.DrawFn, success: bool = True) -> Probe:
    return Probe(**draw(handlers), initial_delay_s=draw(ints(L.PROBE_INITIAL_DELAY)),
                 period_s=draw(ints(L.PROBE_PERIOD)), timeout_s=draw(ints(L.PROBE_TIMEOUT)),
                 success_threshold=draw(ints(L.PROBE_THRESHOLD)) if success else 1,
                 failure_threshold=draw(ints(L.PROBE_THRESHOLD)))


def render_probe(p: Probe | None) -> dict | None:
    if p is None:
        return None
    if p.http_get is not None:
        h = {"httpGet": {"path": p.http_get.path, "port": p.http_get.port, "scheme": p.http_get.scheme}}
    elif p.tcp_socket is not None:
        h = {"tcpSocket": {"port": p.tcp_socket.port}}
    elif p.grpc is not None:
        h = {"grpc": {"port": p.grpc.port}}
    else:
        h = {"exec": {"command": list(p.exec.command)}}
    return {**h, "initialDelaySeconds": p.initial_delay_s, "periodSeconds": float(p.period_s),
            "timeoutSeconds": p.timeout_s, "successThreshold": p.success_threshold,
            "failureThreshold": p.failure_threshold}


def render_prestop(sd: Shutdown) -> dict:
    """`prestop: null` is the native sleep action on the example's Kubernetes 1.30."""
    if sd.prestop in ("sleep", None):
        return {"preStop": {"sleep": {"seconds": sd.drain_s}}}
    return {"preStop": {"exec": {"command": ["/bin/sh", "-c", f"sleep {sd.drain_s}"]}}}


def annotations(svc: Service) -> dict[str, str]:
    out = {f"lockstep.dev/{a}": str(getattr(svc.app, f)) for f, a in conventions.APP_ANNOTATIONS.items()
           if getattr(svc.app, f) is not None}
    if svc.shutdown.finish_s is not None:
        out["lockstep.dev/finish-seconds"] = str(svc.shutdown.finish_s)
    if svc.grpc is not None:  # the gRPC clients and pools, as README's audit section spells them
        g = svc.grpc
        out.update({f"lockstep.dev/grpc-{k}-seconds": str(v) for k, v in (
            ("client-keepalive", g.client_keepalive_s), ("permit-keepalive", g.permit_keepalive_s),
            ("max-silence", g.max_silence_s), ("path-idle", g.path_idle_s)) if v is not None})
    for p in svc.pools:
        out[f"lockstep.dev/pool.{p.name}"] = ",".join(f"{k}-seconds={v}" for k, v in (
            ("max-lifetime", p.max_lifetime_s), ("keepalive", p.keepalive_s), ("path-idle", p.path_idle_s),
            ("server-idle", p.server_idle_s)) if v is not None)
    return out


def manifest(svc: Service) -> dict:
    """A workload the way `infra/` would write it (every number explicit)."""
    container = {"name": svc.name, "image": svc.image, "ports": [{"name": "main", "containerPort": svc.container_port}],
                 "lifecycle": render_prestop(svc.shutdown)}
    for kind in ("startup", "readiness", "liveness"):
        rendered = render_probe(getattr(svc.probes, kind))
        if rendered is not None:
            container[f"{kind}Probe"] = rendered
    spec = {"template": {"metadata": {"labels": pod_labels(svc)},
                         "spec": {"terminationGracePeriodSeconds": svc.shutdown.grace_s, "containers": [container]}},
            "minReadySeconds": svc.rollout.min_ready_s}
    if svc.replicas is not None:
        spec["replicas"] = svc.replicas
    if svc.argo is not None:  # a blue-green Rollout, as infra/rollout.py writes it
        spec["strategy"] = {"blueGreen": {
            "activeService": svc.name, "previewService": f"{svc.name}-preview", "autoPromotionEnabled": True,
            "scaleDownDelaySeconds": svc.argo.scale_down_delay_s,
            "abortScaleDownDelaySeconds": svc.argo.abort_scale_down_delay_s}}
        spec["progressDeadlineSeconds"] = svc.rollout.progress_deadline_s
        return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
                "metadata": {"name": svc.name, "namespace": svc.namespace, "annotations": annotations(svc)},
                "spec": spec}
    if svc.kind == "Deployment":
        spec["strategy"] = {"type": "RollingUpdate", "rollingUpdate": {
            "maxSurge": svc.rollout.max_surge, "maxUnavailable": svc.rollout.max_unavailable}}
        spec["progressDeadlineSeconds"] = svc.rollout.progress_deadline_s
    return {"apiVersion": "apps/v1", "kind": svc.kind,
            "metadata": {"name": svc.name, "namespace": svc.namespace, "annotations": annotations(svc)},
            "spec": spec}


def render_pdb(pdb: Pdb) -> dict:
    spec = {"selector": {"matchLabels": pdb.selector}} if pdb.selector is not None else {}
    if pdb.min_available is not None:
        spec["minAvailable"] = pdb.min_available
    else:
        spec["maxUnavailable"] = pdb.max_unavailable
    return {"spec": spec}


def render_hpa(hpa: Hpa) -> dict:
    return {"spec": {"minReplicas": hpa.min_replicas, "maxReplicas": float(hpa.max_replicas), "metrics": [
        {"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": hpa.target_cpu_percent}}}]}}


def render_tg(lb: LoadBalancer) -> dict:
    """pulumi-aws `TargetGroup` inputs as the engine passes them to a policy."""
    hc = lb.health_check
    check = {"protocol": hc.protocol, "port": str(hc.port), "interval": float(hc.interval_s),
             "timeout": hc.timeout_s, "healthyThreshold": hc.healthy_threshold,
             "unhealthyThreshold": hc.unhealthy_threshold}
    if hc.path is not None:
        check.update(path=hc.path, matcher=hc.matcher)
    return {"protocol": lb.protocol, "port": lb.port, "targetType": lb.target_type, "vpcId": lb.vpc_id,
            "deregistrationDelay": lb.deregistration_delay_s, "slowStart": lb.slow_start_s, "healthCheck": check}


@st.composite
def load_balancers(draw: st.DrawFn) -> LoadBalancer:
    kind = draw(st.sampled_from(["alb", "nlb"]))
    protocol = draw(st.sampled_from(["HTTP", "HTTPS"] if kind == "alb" else ["TCP", "TLS"]))
    hc_protocol = draw(st.sampled_from(["HTTP", "HTTPS", "TCP"]))
    http = hc_protocol != "TCP"
    hc = HealthCheck(protocol=hc_protocol, path="/hc" if http else None, matcher="200-299" if http else None,
                     port=draw(st.sampled_from(["traffic-port", 8081])),
                     interval_s=draw(ints(L.HC_INTERVAL)), timeout_s=draw(ints(L.HC_TIMEOUT)),
                     healthy_threshold=draw(ints(L.HC_THRESHOLD)), unhealthy_threshold=draw(ints(L.HC_THRESHOLD)))
    fields = {"idle_timeout_s": draw(ints(L.ALB_IDLE_TIMEOUT))} if kind == "alb" else {}
    return LoadBalancer(kind=kind, protocol=protocol, target_type=draw(st.sampled_from(["ip", "instance"])),
                        port=draw(ports), vpc_id="vpc-1", health_check=hc, **fields,
                        deregistration_delay_s=draw(ints(L.DEREGISTRATION_DELAY)),
                        slow_start_s=draw(st.sampled_from([0, 30, 900])) if kind == "alb" else 0)


@st.composite
def services(draw: st.DrawFn) -> Service:
    kind = draw(st.sampled_from(["Deployment", "StatefulSet"]))
    hpa = draw(st.none() | st.builds(Hpa, min_replicas=st.integers(1, 5), max_replicas=st.integers(5, 50),
                                     target_cpu_percent=st.integers(1, 1000)))
    replicas = draw(st.integers(0, 50) if hpa is None else st.none() | st.integers(0, 50))
    amount = st.integers(0, 10) | percent
    pdb = draw(st.none() | st.builds(Pdb, min_available=amount, selector=st.none() | st.just({"tier": "a"}))
               | st.builds(Pdb, max_unavailable=amount))
    opt = st.none() | ints(L.SECONDS)
    return Service(
        name="svc", namespace="ns", kind=kind, image="img", container_port=draw(ports), replicas=replicas,
        labels={"tier": "a"}, hpa=hpa, pdb=pdb,
        app=AppFacts(warmup_s=draw(opt), max_request_s=draw(opt), max_recovery_s=draw(opt),
                     keepalive_s=draw(opt), catch_up_s=draw(opt)),
        probes={"startup": draw(st.none() | probes_(success=False)), "readiness": draw(st.none() | probes_()),
                "liveness": draw(st.none() | probes_(success=False))},
        shutdown=Shutdown(drain_s=draw(ints(L.SECONDS)), finish_s=draw(opt), grace_s=draw(ints(L.GRACE)),
                          prestop=draw(st.sampled_from(["sleep", "exec"]))),
        rollout=draw(rollouts(kind)))


def rollouts(kind: str) -> st.SearchStrategy[Rollout]:
    """StatefulSets carry only minReadySeconds: surge, unavailable and the deadline keep
    Kubernetes' defaults (the rules replace their pods one at a time)."""
    if kind == "StatefulSet":
        return st.builds(Rollout, min_ready_s=ints(L.MIN_READY))
    amount = st.integers(0, 10) | percent
    return st.builds(Rollout, max_surge=amount, max_unavailable=amount, min_ready_s=ints(L.MIN_READY),
                     progress_deadline_s=ints(L.PROGRESS_DEADLINE))


def extracted(svc: Service) -> Service:
    pdb = x.pdb(render_pdb(svc.pdb)) if svc.pdb is not None else None
    hpa = x.hpa(render_hpa(svc.hpa)) if svc.hpa is not None else None
    return x.workload(manifest(svc), pdb=pdb, hpa=hpa, lb=svc.lb, readiness_gate=svc.readiness_gate)


@given(services())
def test_a_rendered_workload_extracts_to_the_same_service(svc):
    got = extracted(svc)
    assert pod_labels(got) == pod_labels(svc)
    assert got.model_copy(update={"labels": svc.labels, "name_label": svc.name_label}) == svc
    assert pod_labels(got) == pod_labels(svc)


@given(load_balancers())
def test_rendered_target_group_inputs_extract_to_the_same_load_balancer(lb):
    got = x.target_group(render_tg(lb), attach_to_arn=lb.attach_to_arn,
                         idle_timeout_s=lb.idle_timeout_s if lb.kind == "alb" else None)
    assert got == lb


def test_every_service_of_the_example_stack_extracts_to_itself():
    for svc in read_stack_file(None).services:
        lb = None
        if svc.lb is not None:
            lb = x.target_group(render_tg(svc.lb), attach_to_arn=svc.lb.attach_to_arn,
                                idle_timeout_s=svc.lb.idle_timeout_s if svc.lb.kind == "alb" else None)
            lb = lb.model_copy(update={k: getattr(svc.lb, k) for k in (
                "listener_port", "rule_priority", "path_patterns", "endpoint_propagation_s")})
        got = x.workload(manifest(svc), lb=lb, readiness_gate=svc.readiness_gate,
                         pdb=x.pdb(render_pdb(svc.pdb)) if svc.pdb else None,
                         hpa=x.hpa(render_hpa(svc.hpa)) if svc.hpa else None)
        resolved = svc.shutdown.model_copy(update={"prestop": svc.shutdown.prestop or "sleep"})
        assert pod_labels(got) == pod_labels(svc)
        # a service's gRPC clients and connection pools come back from their lockstep.dev annotations
        assert (got.grpc, got.pools) == (svc.grpc, svc.pools)
        # the proxies in front (ingress-nginx, the mesh proxy) are the linker's to read, from more
        # resources than the workload (tests/audit/test_nginx_read.py, test_mesh_read.py)
        assert got.path == ()
        got = got.model_copy(update={"path": svc.path})
        assert got.model_copy(update={"labels": svc.labels, "name_label": svc.name_label}) == \
            svc.model_copy(update={"shutdown": resolved})


def test_a_services_fact_annotations_carry_its_grpc_clients_and_pools_as_this_test_spells_them():
    for svc in read_stack_file(None).services:
        written = conventions.fact_annotations(svc)
        ours = annotations(svc)
        assert {k: v for k, v in written.items() if "grpc-" in k or ".pool." in k or "/pool." in k} == {
            k: v for k, v in ours.items() if "grpc-" in k or "/pool." in k}
