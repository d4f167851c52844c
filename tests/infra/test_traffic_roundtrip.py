"""What infra writes for node disruptions is what the audit reads back (issue 13): the NLB
connection attributes and the Service's externalTrafficPolicy go through one table of keys
(`timing.extract.traffic`), so a render audited comes back with the model's own values."""

from __future__ import annotations

import pytest

from lockstep.timing.audit import adapt
from lockstep.timing.audit.reader import read_all
from lockstep.timing.bind import link
from lockstep.timing.extract import traffic as T
from tests.infra.support import example_values

pytest.importorskip("pulumi")

FEED = 2  # the example's basketball-feed: an NLB on instance targets behind a NodePort Service


def linked_lb(values: dict, tmp_path, name: str):
    from lockstep.infra.render import record
    from lockstep.infra.render_cli import write

    write(record(values), tmp_path)
    docs, problems = read_all([str(tmp_path)])
    assert not problems
    subjects = [s for s in link.link(adapt.resources(docs)).subjects if s.service.name == name]
    assert len(subjects) == 1
    return subjects[0].service.lb


@pytest.mark.parametrize("stated", [
    {"unhealthy_connection_termination": False, "unhealthy_draining_interval_s": 45,
     "deregistration_connection_termination": True, "external_traffic_policy": "Local"},
    {"unhealthy_connection_termination": True, "deregistration_connection_termination": False,
     "external_traffic_policy": "Cluster"},
])
def test_a_render_audited_reads_back_the_connection_attributes_and_traffic_policy(stated, tmp_path) -> None:
    values = example_values()
    svc = values["services"][FEED]
    svc["lb"].update(stated)
    if stated["external_traffic_policy"] == "Local":
        svc["shutdown"].update(drain_s=45, grace_s=100)  # Local: the drain covers the node check
        del values["nodes"]["kubelet"]  # a node shutdown would want a drain past the node check too
        values["heartbeat_specs"][1]["loss_time_s"] = 170
    lb = linked_lb(values, tmp_path, svc["name"])
    for attr in T.CONNECTION_ATTRIBUTES:
        want = stated.get(attr.field, attr.default)
        if attr is T.UNHEALTHY_DRAINING and stated["unhealthy_connection_termination"]:
            want = attr.default  # not written while unhealthy connections are terminated
        assert getattr(lb, attr.field) == want, attr.key
    assert lb.external_traffic_policy == stated["external_traffic_policy"]
