"""The annotations infra writes are read back by extraction as the same facts."""

from __future__ import annotations

from lockstep.timing import conventions, extract
from lockstep.timing.config import read_stack_file
from lockstep.timing.model import Accept


def services():
    return {s.name: s for s in read_stack_file(None).services}


def test_every_known_app_fact_and_the_finish_time_become_annotations():
    api = services()["api"]
    assert conventions.fact_annotations(api) == {
        "lockstep.dev/warmup-seconds": "10", "lockstep.dev/max-request-seconds": "30",
        "lockstep.dev/max-recovery-seconds": "30", "lockstep.dev/keepalive-seconds": "75",
        "lockstep.dev/catch-up-seconds": "0", "lockstep.dev/finish-seconds": "30"}


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
