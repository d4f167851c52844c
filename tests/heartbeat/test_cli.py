"""`lockstep heartbeat`: the dry run on the example stack, and one-line exit-2 errors."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from lockstep.heartbeat import http
from lockstep.timing.cli import main
from lockstep.timing.config import read_stack_file
from lockstep.timing.heartbeat_config import BROKER_URL_ENV, runtime_config


def test_the_dry_run_blocks_only_football_and_reports_the_block_only_after_the_gateway_applied_it(capsys):
    assert main(["heartbeat", "--once", "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    published = [line for line in out if not line.startswith("#") and not line.startswith(" ")]
    block = next(i for i, line in enumerate(published) if "command  block   football-live" in line)
    assert published[block].startswith("+ 420s"), "loss_time 120 s after the failure observed at +300 s"
    applied = next(i for i, line in enumerate(published) if "applied  block   football-live" in line)
    first_blocked = next(i for i, line in enumerate(published) if "blocked=['football-live']" in line)
    assert block < applied < first_blocked, "decided, then applied by the gateway, then told"
    assert published[applied].startswith("+ 421s") and published[first_blocked].startswith("+ 421s")
    unblock = next(i for i, line in enumerate(published) if "command  unblock football-live" in line and i > block)
    assert published[unblock].startswith("+ 660s"), "recovery_time 60 s after health returned at +600 s"
    unapplied = next(i for i, line in enumerate(published) if "applied  unblock football-live" in line and i > unblock)
    assert all("blocked=['football-live']" in line for line in published[first_blocked:unapplied]
               if "beat" in line), "clients hear of the unblock only once the gateway applied it"
    assert "blocked=[]" in published[unapplied + 1]
    assert not any("block   basketball-live" in line for line in published), \
        "a rolling update, a StatefulSet restart, a rescale and an eviction never block"
    assert any("critical failure" in line for line in out)


def test_the_dry_run_json_lists_every_message_in_publication_order(capsys):
    assert main(["heartbeat", "--once", "--dry-run", "--json"]) == 0
    msgs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    beats = [m for m in msgs if m["exchange"] == "beats"]
    assert all(m["ttl_s"] == 30 and m["body"]["ttl_s"] == 30 for m in beats)
    silent = [m["t"] for m in beats if 470 <= m["t"] < 480]
    assert silent == [], "no beat while the API cannot be read"
    assert [m["t"] for m in msgs] == sorted(m["t"] for m in msgs)


def write_config(tmp_path: Path, **change: object) -> Path:
    doc = runtime_config(read_stack_file(None)).model_dump(mode="json")
    for dotted, value in change.items():
        node = doc
        *path, last = dotted.split("__")
        for part in path:
            node = node[int(part)] if isinstance(node, list) else node[part]
        node[last] = value
    target = tmp_path / "heartbeat.json"
    target.write_text(json.dumps(doc))
    return target


def test_a_bad_config_exits_2_with_one_line_naming_the_field(tmp_path, capsys):
    path = write_config(tmp_path, specs__0__loss_time_s=0)
    assert main(["heartbeat", "--config", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "specs.0.loss_time_s" in err[0] and "greater than or equal to 1" in err[0]


def test_a_config_that_is_not_json_exits_2(tmp_path, capsys):
    bad = tmp_path / "heartbeat.json"
    bad.write_text("{not json")
    assert main(["heartbeat", "--config", str(bad)]) == 2
    assert "heartbeat.json" in capsys.readouterr().err


def test_a_missing_broker_url_exits_2_naming_the_variable(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(BROKER_URL_ENV, raising=False)
    assert main(["heartbeat", "--config", str(write_config(tmp_path))]) == 2
    assert BROKER_URL_ENV in capsys.readouterr().err


def test_bad_recorded_observations_exit_2_naming_the_entry(tmp_path, capsys):
    rec = tmp_path / "obs.json"
    rec.write_text(json.dumps({"series": [{"t": 0, "items": [{"kind": "Deployment", "metadata": {
        "name": "x", "namespace": "feeds"}, "status": {"readyReplicas": -2}}]}]}))
    assert main(["heartbeat", "--once", "--dry-run", "--observations", str(rec)]) == 2
    assert "series.0.items.0" in capsys.readouterr().err


def test_once_without_dry_run_is_refused(capsys):
    assert main(["heartbeat", "--once"]) == 2


def test_the_cli_module_imports_neither_kubernetes_nor_pika():
    code = ("import sys, heartbeat.cli, timing.cli; timing.cli.build_parser('heartbeat'); "
            "assert not {'kubernetes', 'pika'} & set(sys.modules), sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)


class Health:
    def __init__(self, live: bool, ready: bool) -> None:
        self._live, self._ready = live, ready

    def live(self, now: float) -> bool:
        return self._live

    def ready(self) -> bool:
        return self._ready

    def status(self) -> dict[str, object]:
        return {"leader": False}


@pytest.mark.parametrize(("live", "ready"), [(True, False), (False, True)])
def test_health_endpoints_answer_503_when_not_live_or_not_ready(live, ready):
    server = http.start(0, Health(live, ready), host="127.0.0.1")
    port = server.server_address[1]
    try:
        for path, ok in (("/hc/live", live), ("/hc/ready", ready)):
            try:
                code = urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5).status
            except urllib.error.HTTPError as err:
                code = err.code
            assert code == (200 if ok else 503), path
    finally:
        server.shutdown()


PURE = ["observe", "decide", "core", "messages"]


@pytest.mark.parametrize("module", PURE)
def test_the_decision_core_imports_only_timing_the_standard_library_and_itself(module):
    import ast

    source = (Path(__file__).resolve().parents[2] / "heartbeat" / f"{module}.py").read_text()
    roots = set()
    for node in ast.walk(ast.parse(source)):
        # lockstep's own packages by their name under `lockstep.` (timing, heartbeat)
        if isinstance(node, ast.Import):
            roots |= {a.name.removeprefix("lockstep.").split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            name = node.module.removeprefix("lockstep.")
            roots.add(name.split(".")[0])
            if name == "heartbeat":
                assert {a.name for a in node.names} <= set(PURE), node.module
            elif name.startswith("heartbeat."):
                assert name.split(".")[1] in PURE, node.module
    assert roots <= set(sys.stdlib_module_names) | {"timing", "heartbeat"}, roots


@pytest.mark.parametrize(("mode", "says"), [("watch", "watch: each recorded change acted on when it appears "
                                                      "(relist every 5s)"),
                                            ("poll", "observe every 5s")])
def test_the_dry_run_header_says_how_the_mode_observes_and_the_ack_timeout(tmp_path, capsys, mode, says):
    path = write_config(tmp_path, observe_mode=mode, ack_timeout_s=7)
    assert main(["heartbeat", "--once", "--dry-run", "--config", str(path)]) == 0
    header = capsys.readouterr().out.splitlines()[1]
    assert says in header and "within 7s" in header
    assert ("observe every" in header) == (mode == "poll")
