"""Every error-level rule against the catalogue's formulas (tests/timing/oracle.py), on
stacks whose numbers hover around the example's boundaries."""

from __future__ import annotations

import pytest
from hypothesis import event, given
from hypothesis.errors import InvalidArgument

from tests.timing import oracle
from tests.timing.strategies import base, build, error_ids, knobs_under, seconds, varied_stacks, varied_values
from lockstep.timing.invariants import RULE_IDS, InvariantErrors, validate
from lockstep.timing.model import Stack


def test_the_example_stack_breaks_no_rule() -> None:
    stack = build()
    assert error_ids(stack) == set()
    assert oracle.stack_errors(stack) == set()


@given(varied_stacks())
def test_the_validator_names_exactly_the_rules_the_catalogue_says_are_broken(stack: Stack) -> None:
    expected = oracle.stack_errors(stack)
    event("compliant" if not expected else "broken")
    assert error_ids(stack) == expected


@given(varied_values())
def test_any_model_the_validator_accepts_satisfies_every_error_rule(values: dict) -> None:
    try:
        stack = validate(values)
    except InvariantErrors as err:
        named = {f.id for f in err.findings}
        assert named == oracle.stack_errors(build(values=values))
        assert all(f.status == "error" for f in err.findings)
        event("rejected")
    else:
        event("accepted")
        assert oracle.stack_errors(stack) == set()


def test_the_oracle_covers_every_error_rule_of_the_registry() -> None:
    # A rule missing from the oracle would make the two tests above vacuous for it.
    import inspect

    text = inspect.getsource(oracle)
    warnings_only = {"prestop-uses-native-sleep", "probe-timeout-within-period", "hpa-owns-replicas",
                     "failback-is-deliberate"}
    missing = [r for r in RULE_IDS if r not in warnings_only and f'"{r}"' not in text]
    assert missing == []


def test_seconds_refuses_an_empty_range_instead_of_generating_nothing() -> None:
    with pytest.raises(InvalidArgument, match="empty range"):
        seconds(10, 9)


def test_knobs_under_refuses_a_prefix_that_matches_nothing() -> None:
    with pytest.raises(InvalidArgument, match="no knob"):
        knobs_under("services.9")


def test_base_returns_an_independent_copy_each_time() -> None:
    a = base()
    a["margin_s"] = 99
    assert base()["margin_s"] == 5
