"""Bad input to `lockstep heartbeat` (issue 17): one line naming the file and the field or the
allowed range, exit 2, never a traceback nor a hang."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lockstep.heartbeat.dryrun import MAX_REPLAY_S
from tests.heartbeat.fake_kube import FakeKube
from tests.heartbeat.test_cli import write_config
from lockstep.timing.cli import main
from lockstep.timing.heartbeat_config import BROKER_URL_ENV

EXAMPLE = Path(__file__).resolve().parents[2] / "heartbeat" / "examples" / "observations.json"


def one_line(capsys: Any) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "Traceback" not in err[0]
    return err[0]


def recording(tmp_path: Path, change: Any) -> Path:
    doc = json.loads(EXAMPLE.read_text())
    change(doc)
    path = tmp_path / "obs.json"
    path.write_text(json.dumps(doc))
    return path


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("ttl", [1e30, 1e300, "30", True, 30.5])
def test_a_beat_ttl_that_is_no_integer_in_range_is_one_line_naming_the_field(tmp_path, capsys, ttl):
    path = write_config(tmp_path, beat_ttl_s=ttl)
    assert main(["heartbeat", "--once", "--dry-run", "--config", str(path)]) == 2
    assert "beat_ttl_s" in one_line(capsys)


@pytest.mark.parametrize(("where", "value"), [("metadata", "football-feed"), ("metadata", ["x"]),
                                              ("status", ["ready"]), ("status", "ok"), ("spec", 3)])
def test_an_observed_object_whose_part_is_not_an_object_is_one_line_naming_the_entry(
        tmp_path, capsys, where, value):
    path = recording(tmp_path, lambda doc: doc["series"][0]["items"][0].__setitem__(where, value))
    assert main(["heartbeat", "--once", "--dry-run", "--observations", str(path)]) == 2
    line = one_line(capsys)
    assert "obs.json" in line and "series.0.items.0" in line and where in line


def test_observations_nested_a_thousand_deep_are_one_line(tmp_path, capsys):
    path = tmp_path / "obs.json"
    path.write_text('{"series": ' + nested(1000) + "}")
    assert main(["heartbeat", "--once", "--dry-run", "--observations", str(path)]) == 2
    assert "obs.json" in one_line(capsys)


@pytest.mark.parametrize("depth", [1000, 100_000])
def test_a_config_nested_deep_is_one_line(tmp_path, capsys, depth):
    path = tmp_path / "heartbeat.json"
    path.write_text('{"specs": ' + nested(depth) + "}")
    assert main(["heartbeat", "--once", "--dry-run", "--config", str(path)]) == 2
    assert "heartbeat.json" in one_line(capsys)


@pytest.mark.parametrize("end", [1e9, MAX_REPLAY_S + 1, -1, float("inf")])
def test_a_replay_end_past_the_limit_is_refused_at_once_naming_the_limit(tmp_path, capsys, end):
    path = recording(tmp_path, lambda doc: doc.__setitem__("end", end))
    assert main(["heartbeat", "--once", "--dry-run", "--observations", str(path)]) == 2
    line = one_line(capsys)
    assert "end" in line and str(MAX_REPLAY_S) in line


def test_a_replay_end_at_the_limit_is_accepted(tmp_path):
    from lockstep.heartbeat import dryrun

    path = recording(tmp_path, lambda doc: doc.__setitem__("end", MAX_REPLAY_S))
    assert dryrun.load(str(path)).end == MAX_REPLAY_S


def service(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
    env[BROKER_URL_ENV] = "amqp://127.0.0.1:1/"  # never reached: the input is refused first
    return subprocess.run([sys.executable, "-m", "lockstep", "heartbeat", "--config", str(tmp_path / "heartbeat.json"),
                           *args], env=env, capture_output=True, text=True, timeout=60)


def kubeconfig(path: Path, server: str) -> Path:
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "fake", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "fake", "user": "u"}}]}))
    return path


@pytest.mark.parametrize("text", ["{not: [yaml", "just a string", "apiVersion: v1\nkind: Config\n", ""])
def test_a_malformed_kubeconfig_is_one_line_naming_kubernetes(tmp_path, text):
    write_config(tmp_path)
    bad = tmp_path / "kubeconfig"
    bad.write_text(text)
    done = service(tmp_path, "--kubeconfig", str(bad))
    assert done.returncode == 2, done.stderr
    err = done.stderr.strip().splitlines()
    assert len(err) == 1 and "kubernetes" in err[0] and "Traceback" not in done.stderr, done.stderr


def test_a_health_port_already_taken_is_one_line_naming_the_port(tmp_path):
    kube = FakeKube()
    taken = socket.socket()
    try:
        taken.bind(("0.0.0.0", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        write_config(tmp_path, port=port)
        done = service(tmp_path, "--kubeconfig", str(kubeconfig(tmp_path / "kubeconfig", kube.url)))
    finally:
        taken.close()
        kube.close()
    assert done.returncode == 2, done.stderr
    err = [line for line in done.stderr.strip().splitlines() if not line.startswith("{")]
    assert len(err) == 1 and f"port: cannot serve the health endpoints on {port}" in err[0], done.stderr
    assert "Traceback" not in done.stderr
