"""Shared test set-up: hypothesis profiles chosen by HYPOTHESIS_PROFILE (dev|ci|mutmut)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

settings.register_profile("dev", max_examples=50, deadline=None)
settings.register_profile("ci", max_examples=150, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
# Under mutmut every test runs once per mutant: derandomized, few examples, no database, and
# no shrinking: the first failing example kills the mutant (shrinking it to the smallest one,
# for a reader who never sees it, took up to a minute per mutant).
settings.register_profile("mutmut", max_examples=25, deadline=None, derandomize=True,
                          database=None, suppress_health_check=list(HealthCheck),
                          phases=(Phase.explicit, Phase.reuse, Phase.generate))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


# Under pytest-xdist (`scripts/test` runs `-n auto --dist loadgroup`), the tests that share an
# expensive session fixture run in one worker, so it is started once, not once per worker:
# the RabbitMQ broker, headless Chromium, the served policy pack.
SHARED_FIXTURES = {"broker": "broker", "render_mermaid_svg": "browser", "analyzer": "policy-pack"}


def pytest_collection_modifyitems(config, items):  # noqa: ARG001 - pytest's hook signature
    import pytest

    if "MUTANT_UNDER_TEST" in os.environ:  # under the mutation gate (set "" in its fork server)
        gate = _gate_durations()  # read in the fork server's warm-up collection, inherited after
        mutant = os.environ["MUTANT_UNDER_TEST"]
        if mutant:  # one mutant's tests: the likeliest killers first (tests/mutant_order.py)
            from tests.mutant_order import order

            items[:] = order(items, mutant, gate)

    for item in items:
        for fixture, group in SHARED_FIXTURES.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(pytest.mark.xdist_group(group))
                break


_GATE_DURATIONS: dict[str, float] = {}


def _gate_durations() -> dict[str, float]:
    """mutmut's per-test durations, read in the process that forks the mutants' children (the
    working directory is its `mutants/` copy, where the stats file lies) once they exist: the
    stats run collects before they are written, and must not leave an empty order behind."""
    if not _GATE_DURATIONS:
        from pathlib import Path

        from tests.mutant_order import durations

        _GATE_DURATIONS.update(durations(Path("mutmut-stats.json")))
    return _GATE_DURATIONS
