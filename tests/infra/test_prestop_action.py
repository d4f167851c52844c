"""`timing.conventions.prestop_action`: which preStop handler carries the drain."""

from __future__ import annotations

import pytest

from lockstep.timing.conventions import prestop_action
from lockstep.timing.model import Shutdown


def shutdown(drain: int = 20, prestop=None) -> Shutdown:
    return Shutdown(drain_s=drain, finish_s=10, grace_s=60, prestop=prestop)


@pytest.mark.parametrize(("version", "expected"), [("1.29", "exec"), ("1.30", "sleep"), ("1.31", "sleep"),
                                                   ("1.9", "exec")])
def test_native_sleep_from_1_30_on(version, expected):
    assert prestop_action(shutdown(), version) == expected


def test_the_model_override_wins_over_the_version():
    assert prestop_action(shutdown(prestop="exec"), "1.33") == "exec"
    assert prestop_action(shutdown(prestop="sleep"), "1.29") == "sleep"


def test_a_zero_drain_needs_no_hook_even_when_one_is_asked_for():
    """`exec sleep 0` would only add a failure mode (no sleep binary in a distroless image)."""
    assert prestop_action(shutdown(drain=0), "1.30") == "none"
    assert prestop_action(shutdown(drain=0, prestop="exec"), "1.30") == "none"
    assert prestop_action(shutdown(drain=0, prestop="sleep"), "1.29") == "none"
