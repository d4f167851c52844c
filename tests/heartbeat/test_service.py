"""The service as it runs in its pod: `lockstep heartbeat --config FILE` in its own process,
watching the stand-in Kubernetes API (kubeconfig), with the runnable example gateway in a
process of its own on the real broker; beats start once the gateway acknowledged every
scope; SIGTERM ends both gracefully, the service releasing the lease."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from tests.heartbeat import k8s
from tests.heartbeat.broker import free_port
from tests.heartbeat.fake_kube import FakeKube
from tests.heartbeat.support import drain, short_config
from lockstep.timing.heartbeat_config import BROKER_URL_ENV

pytestmark = pytest.mark.broker


def get(url: str) -> int:
    try:
        return urllib.request.urlopen(url, timeout=2).status
    except urllib.error.HTTPError as err:
        return err.code
    except OSError:
        return 0


def test_the_service_process_beats_what_the_example_gateway_applied_and_stops_gracefully_on_sigterm(
        broker, tmp_path):
    import pika

    kube = FakeKube()
    kube.objects[("feeds", "deployments")] = [k8s.workload("Deployment", "football-feed", expected=2)]
    kube.objects[("feeds", "statefulsets")] = [k8s.workload("StatefulSet", "basketball-feed", expected=3)]
    cfg = short_config().model_copy(update={"port": free_port(), "observe_mode": "watch"})
    (tmp_path / "heartbeat.json").write_text(cfg.model_dump_json())
    (tmp_path / "kubeconfig").write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "fake", "cluster": {"server": kube.url}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "fake", "user": "u"}}]}))
    conn = pika.BlockingConnection(pika.URLParameters(broker.url))
    ch = conn.channel()
    for ex in (cfg.commands_exchange, cfg.beats_exchange):
        ch.exchange_declare(ex, exchange_type="topic", durable=True)
    for q, ex in (("gw", cfg.commands_exchange), ("cl", cfg.beats_exchange)):
        ch.queue_declare(f"{ex}.{q}", durable=True)
        ch.queue_bind(f"{ex}.{q}", ex, "#")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
    env.update({BROKER_URL_ENV: broker.url, "POD_NAME": "heartbeat-0"})
    gateway = subprocess.Popen([sys.executable, "-m", "lockstep.heartbeat.examples.gateway_example",
                                "--config", str(tmp_path / "heartbeat.json")], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc = subprocess.Popen([sys.executable, "-m", "lockstep", "heartbeat", "--config", str(tmp_path / "heartbeat.json"),
                             "--kubeconfig", str(tmp_path / "kubeconfig")], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while get(f"http://127.0.0.1:{cfg.port}/hc/ready") != 200 and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()[1]
            time.sleep(0.2)
        assert get(f"http://127.0.0.1:{cfg.port}/hc/live") == 200
        beats: list = []
        while not beats and time.monotonic() < deadline:
            beats = drain(ch, f"{cfg.beats_exchange}.cl")
            time.sleep(0.2)
        assert beats and beats[0][1]["healthy"] == ["football-live", "basketball-live"]
        told = {scope["spec"]: scope["applied_id"] for scope in beats[0][1]["scopes"]}
        assert beats[0][1]["sent_by"] == "heartbeat-0"
        lease = kube.leases[(cfg.lease.namespace, cfg.lease.name)]
        assert lease["spec"]["holderIdentity"] == "heartbeat-0"

        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=cfg.grace_s)
        assert proc.returncode == 0, err
        assert time.monotonic() - started < cfg.grace_s
        assert not kube.leases[(cfg.lease.namespace, cfg.lease.name)]["spec"].get("holderIdentity"), \
            "the lease is handed over at once on shutdown"
        logs = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
        assert {"start", "leader_acquired", "stop"} <= {entry.get("event") for entry in logs}
        gateway.send_signal(signal.SIGTERM)
        out, gw_err = gateway.communicate(timeout=10)
        assert gateway.returncode == 0, gw_err
        applied = {line.split()[1]: line.split()[2].strip("();") for line in out.splitlines()
                   if line.startswith(("block ", "unblock "))}
        assert applied == told, ("each scope's state in the beat is a command the gateway applied", out)
    finally:
        if gateway.poll() is None:
            gateway.kill()
            gateway.wait()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        conn.close()
        kube.close()
