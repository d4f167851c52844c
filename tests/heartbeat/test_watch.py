"""Watch mode against the stand-in API server: list, then watch from the list's
resourceVersion with bookmarks; resume from the last version seen; relist on 410 Gone; a
full relist every resync period; a failing stream is a critical failure until it lists again."""

from __future__ import annotations

import time
from typing import Any, Callable, Iterator
from urllib.parse import parse_qs

import pytest

from lockstep.heartbeat.kube import LABEL_SELECTOR, ObserveError, WatchObserver
from tests.heartbeat import k8s
from tests.heartbeat.fake_kube import FakeKube
from tests.heartbeat.support import short_config

FOOTBALL = ("Deployment", "feeds", "football-feed")
BASKETBALL = ("StatefulSet", "feeds", "basketball-feed")
STREAMS = 2  # one namespace (feeds) × two kinds


@pytest.fixture
def kube() -> Iterator[FakeKube]:
    fake = FakeKube()
    fake.put("feeds", "deployments", k8s.workload("Deployment", "football-feed", expected=2))
    fake.put("feeds", "statefulsets", k8s.workload("StatefulSet", "basketball-feed", expected=3))
    yield fake
    fake.close()


@pytest.fixture
def start(kube: FakeKube) -> Iterator[Callable[..., WatchObserver]]:
    started: list[WatchObserver] = []

    def go(**update: Any) -> WatchObserver:
        cfg = short_config().model_copy(update={"observe_mode": "watch", "resync_period_s": 300, **update})
        obs = WatchObserver(kube.client(), cfg, timeout_s=2, retry_s=0.1)
        obs.start()
        started.append(obs)
        wait_for(lambda: observed(obs) is not None)
        return obs

    yield go
    for obs in started:
        kube.drop_watches()
        obs.stop()


def observed(obs: WatchObserver) -> dict | None:
    try:
        return obs.observe()
    except ObserveError:
        return None


def wait_for(cond: Callable[[], Any], timeout_s: float = 8.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.02)
    raise AssertionError("condition not met in time")


def watches(kube: FakeKube, resource: str = "deployments") -> list[dict[str, str]]:
    out = []
    for r in list(kube.requests):
        path, _, query = r.partition("?")
        q = {k: v[0] for k, v in parse_qs(query).items()}
        if path.endswith(f"/{resource}") and q.get("watch", "").lower() == "true":
            out.append(q)
    return out


def test_the_observer_lists_once_then_acts_on_each_event_without_listing_again(kube, start):
    obs = start()
    assert obs.lists == STREAMS
    listed_at = kube.version
    first = wait_for(lambda: watches(kube))[0]
    assert (first["resourceVersion"], first["allowWatchBookmarks"].lower(), first["labelSelector"]) == (
        listed_at, "true", LABEL_SELECTOR)
    obs.changed.clear()
    kube.put("feeds", "deployments", k8s.workload("Deployment", "football-feed", expected=2, ready=0))
    assert obs.changed.wait(5), "an event wakes the service loop"
    assert wait_for(lambda: observed(obs)[FOOTBALL].available == 0)
    kube.delete("feeds", "statefulsets", "basketball-feed")
    wait_for(lambda: BASKETBALL not in observed(obs))
    assert obs.lists == STREAMS and obs.events >= 2 and obs.gone == 0


def test_a_restarted_watch_resumes_from_the_last_bookmark_not_from_the_list(kube, start):
    kube.bookmark_every_s = 0.1
    obs = start()
    # a change elsewhere advances the server's version without an event for deployments
    kube.put("feeds", "pods", k8s.pod("p-0", "other"))
    advanced = kube.version
    wait_for(lambda: obs.bookmarks >= 2 * STREAMS)
    kube.drop_watches()
    resumed = wait_for(lambda: watches(kube)[1:])[0]
    assert int(resumed["resourceVersion"]) >= int(advanced)
    assert obs.lists == STREAMS and obs.gone == 0, "a resumed watch needs no list"


def test_a_watch_whose_version_left_the_history_relists_and_sees_what_changed(kube, start):
    obs = start()
    kube.compact()
    kube.drop_watches()
    kube.put("feeds", "deployments", k8s.workload("Deployment", "football-feed", expected=2, ready=0))
    wait_for(lambda: obs.gone >= 1)
    assert wait_for(lambda: (observed(obs) or {}).get(FOOTBALL) and observed(obs)[FOOTBALL].available == 0)
    assert obs.lists > STREAMS


def test_every_stream_relists_each_resync_period_even_without_events(kube, start):
    obs = start(resync_period_s=1)
    wait_for(lambda: obs.lists >= 3 * STREAMS, timeout_s=6)
    assert obs.gone == 0 and observed(obs) is not None


def test_a_stream_that_cannot_watch_fails_the_observation_until_it_lists_again(kube, start):
    obs = start()
    kube.failures["deployments"] = (500, "InternalError")
    kube.drop_watches()
    with pytest.raises(ObserveError, match="deployments in feeds"):
        wait_for(lambda: observed(obs) is None)
        obs.observe()
    lists = obs.lists
    del kube.failures["deployments"]
    wait_for(lambda: observed(obs) is not None)
    assert obs.lists > lists
