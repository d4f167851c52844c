"""Shared test set-up: hypothesis profiles chosen by HYPOTHESIS_PROFILE (dev|ci|mutmut)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=50, deadline=None)
settings.register_profile("ci", max_examples=150, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
# Under mutmut every test runs once per mutant: derandomized, few examples, no database.
settings.register_profile("mutmut", max_examples=25, deadline=None, derandomize=True,
                          database=None, suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


# Under pytest-xdist (`scripts/test` runs `-n auto --dist loadgroup`), the tests that share an
# expensive session fixture run in one worker, so it is started once, not once per worker:
# the RabbitMQ broker, headless Chromium, the served policy pack.
SHARED_FIXTURES = {"broker": "broker", "render_mermaid_svg": "browser", "analyzer": "policy-pack"}


def pytest_collection_modifyitems(config, items):  # noqa: ARG001 - pytest's hook signature
    import pytest

    for item in items:
        for fixture, group in SHARED_FIXTURES.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(pytest.mark.xdist_group(group))
                break
