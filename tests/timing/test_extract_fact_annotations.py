"""The annotations infra writes are read back by extraction as the same facts."""

from __future__ import annotations

import pytest

from lockstep.timing import conventions, extract
from lockstep.timing.extract.annotations import grpc_facts, pools
from lockstep.timing.extract.values import ExtractError
from lockstep.timing.config import read_stack_file
from lockstep.timing.model import Accept


def services():
    return {s.name: s for s in read_stack_file(None).services}


def test_every_known_app_fact_and_the_finish_time_become_annotations():
    api = services()["api"]
    assert conventions.fact_annotations(api) == {
        "lockstep.dev/warmup-seconds": "10", "lockstep.dev/max-request-seconds": "30",
        "lockstep.dev/max-recovery-seconds": "30", "lockstep.dev/keepalive-seconds": "75",
        "lockstep.dev/catch-up-seconds": "0", "lockstep.dev/finish-seconds": "30",
        "lockstep.dev/pool.orders-db": "max-lifetime-seconds=1740,keepalive-seconds=120,path-idle-seconds=0,"
                                       "server-idle-seconds=1800"}


def test_unknown_facts_are_left_out_rather_than_written_as_a_guess():
    feed = services()["football-feed"]
    notes = conventions.fact_annotations(feed)
    assert "lockstep.dev/max-recovery-seconds" not in notes
    assert "lockstep.dev/keepalive-seconds" not in notes
    unknown = feed.model_copy(update={"shutdown": feed.shutdown.model_copy(update={"finish_s": None})})
    assert "lockstep.dev/finish-seconds" not in conventions.fact_annotations(unknown)


def test_annotations_read_back_as_the_same_app_facts_and_accepts():
    for svc in services().values():
        accepted = svc.model_copy(update={"accept": (Accept(id="pdb-allows-eviction", reason="singleton"),
                                                     Accept(id="hpa-owns-replicas", reason="legacy"))})
        notes = conventions.fact_annotations(accepted)
        assert extract.app_facts(notes) == svc.app
        assert notes["lockstep.dev/accept"] == "pdb-allows-eviction,hpa-owns-replicas"
        assert [a.id for a in extract.accepts(notes)] == ["pdb-allows-eviction", "hpa-owns-replicas"]
        assert extract.seconds_annotation(notes, "finish-seconds") == svc.shutdown.finish_s


def test_no_accept_annotation_without_accepted_rules():
    assert "lockstep.dev/accept" not in conventions.fact_annotations(services()["api"])


def test_the_heartbeat_service_states_its_warmup_and_finish_time():
    hb = read_stack_file(None).heartbeat
    assert conventions.fact_annotations(hb) == {"lockstep.dev/warmup-seconds": "5",
                                            "lockstep.dev/finish-seconds": "5"}
    unknown = hb.model_copy(update={"shutdown": hb.shutdown.model_copy(update={"finish_s": None})})
    assert conventions.fact_annotations(unknown) == {"lockstep.dev/warmup-seconds": "5"}


def test_grpc_clients_and_pools_read_back_as_the_stack_states_them():
    by_name = services()
    for name in ("api", "odds-stream"):
        notes = conventions.fact_annotations(by_name[name])
        assert (grpc_facts(notes), pools(notes)) == (by_name[name].grpc, by_name[name].pools)
    assert (grpc_facts({}), pools({})) == (None, ())


def test_an_unstated_grpc_field_is_its_default_or_unknown_and_an_unstated_pool_key_unknown():
    grpc = grpc_facts({"lockstep.dev/grpc-max-silence-seconds": " 40 "})
    assert (grpc.max_silence_s, grpc.client_keepalive_s, grpc.permit_keepalive_s) == (40, None, 300)
    [pool] = pools({"lockstep.dev/pool.db": " keepalive-seconds = 30 , ", "lockstep.dev/other": "x"})
    assert (pool.name, pool.keepalive_s, pool.max_lifetime_s, pool.server_idle_s) == ("db", 30, None, None)
    assert [p.name for p in pools({"lockstep.dev/pool.b": "", "lockstep.dev/pool.a": ""})] == ["b", "a"]


@pytest.mark.parametrize(("notes", "message"), [
    ({"lockstep.dev/pool.db": "lifetime=3"}, "lockstep.dev/pool.db: expected key=whole seconds pairs of "
     "max-lifetime-seconds, keepalive-seconds, path-idle-seconds, server-idle-seconds, got 'lifetime=3'"),
    ({"lockstep.dev/pool.db": "keepalive-seconds"}, "got 'keepalive-seconds'"),
    ({"lockstep.dev/pool.db": "keepalive-seconds=1m"}, "got 'keepalive-seconds=1m'"),
    ({"lockstep.dev/pool.db": "keepalive-seconds="}, "got 'keepalive-seconds='"),
    ({"lockstep.dev/pool.db": "keepalive-seconds=1=2"}, "got 'keepalive-seconds=1=2'"),
    ({"lockstep.dev/pool.DB": "keepalive-seconds=1"}, "lockstep.dev/pool.DB: name: String should match pattern"),
    ({"lockstep.dev/pool.db": "keepalive-seconds=1,keepalive-seconds=2"}, None),  # the last one wins
    ({"lockstep.dev/grpc-client-keepalive-seconds": "5m"},
     "lockstep.dev/grpc-client-keepalive-seconds: expected whole seconds, got '5m'"),
])
def test_a_bad_grpc_or_pool_annotation_names_itself_and_what_it_takes(notes, message):
    if message is None:
        assert pools(notes)[0].keepalive_s == 2
        return
    with pytest.raises(ExtractError) as err:
        pools(notes) if any("pool." in k for k in notes) else grpc_facts(notes)
    assert message in str(err.value)
