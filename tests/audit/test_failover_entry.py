"""Which workload a Route 53 failover's health check reaches (`timing.bind.entry`): the
configured one, the only one behind an HTTP(S) target group, or the one the ALB routes the
check's path to; and the audit's `--entry-service`."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lockstep.timing.bind.entry import entry_workload, path_pattern_matches, unreached
from lockstep.timing.cli import main
from lockstep.timing.config import read_stack_file

ROOT = Path(__file__).resolve().parents[2]
PATH = read_stack_file(str(ROOT / "Pulumi.example.yaml"))


@pytest.mark.parametrize(("pattern", "path", "matches"), [
    ("/api/*", "/api/health", True), ("/api/*", "/api/", True), ("/api/*", "/api", False),
    ("/api/*", "/API/health", False),  # case-sensitive
    ("/v?/x", "/v1/x", True), ("/v?/x", "/v10/x", False),
    ("/*", "/anything/at/all", True), ("/a.b", "/aXb", False),  # a dot is a dot
    ("/[ab]", "/a", False), ("/[ab]", "/[ab]", True),  # no character classes
    ("/api/*", "/api/health?full=1", True),  # the query string is not compared
])
def test_alb_path_patterns_know_star_and_question_mark_only(pattern, path, matches) -> None:
    assert path_pattern_matches(pattern, path) is matches


@given(st.text(st.characters(blacklist_characters="*?", codec="ascii"), max_size=20))
def test_a_pattern_without_wildcards_matches_only_itself_and_a_star_suffix_its_extensions(literal) -> None:
    path = literal.split("?")[0]
    assert path_pattern_matches(path, path)
    assert path_pattern_matches(path + "*", path + "/more")
    assert not path_pattern_matches(path + "?", path)


def svc(name: str):
    return next(s for s in PATH.services if s.name == name)


def with_lb(name: str, **changes):
    s = svc(name)
    return s.model_copy(update={"lb": s.lb.model_copy(update=changes)})


def test_the_entry_is_the_named_one_else_the_only_http_one_else_the_one_the_path_reaches() -> None:
    services = [(s, s.name) for s in PATH.services]
    assert entry_workload(services, "/api/health", "checkout") == "checkout"
    assert entry_workload(services, "/api/health", "nope") is None
    assert entry_workload(services, "/api/health", None) == "api"  # /api/* vs /checkout/*
    assert entry_workload(services, "/checkout/health", None) == "checkout"
    assert entry_workload(services, "/other", None) is None
    assert entry_workload(services, None, None) is None
    alone = [(s, s.name) for s in PATH.services if s.name != "checkout"]
    assert entry_workload(alone, None, None) == "api"  # the only one behind an HTTP(S) group


def test_two_rules_matching_the_path_are_told_apart_by_priority_only() -> None:
    catch_all = with_lb("checkout", path_patterns=("/*",), rule_priority=200)
    both = [(svc("api"), "api"), (catch_all, "checkout")]
    assert entry_workload(both, "/api/health", None) == "api"  # priority 100 before 200
    first = with_lb("checkout", path_patterns=("/*",), rule_priority=50)
    assert entry_workload([(svc("api"), "api"), (first, "checkout")], "/api/health", None) == "checkout"
    unknown = with_lb("checkout", path_patterns=("/*",), rule_priority=None)
    assert entry_workload([(svc("api"), "api"), (unknown, "checkout")], "/api/health", None) is None
    same = with_lb("checkout", path_patterns=("/*",), rule_priority=100)
    assert entry_workload([(svc("api"), "api"), (same, "checkout")], "/api/health", None) is None


def test_the_one_line_says_why_no_entry_was_found() -> None:
    assert unreached("nope", "/api/health") == " (no workload named 'nope')"
    assert unreached(None, "/x") == " (no single workload behind an HTTP(S) target group serves the health check's path '/x')"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("path-render")
    assert main(["render", "-o", str(out), str(ROOT / "Pulumi.example.yaml")]) == 0
    return out


def test_the_rendered_path_example_audits_with_the_failover_on_the_workload_its_check_reaches(rendered, capsys) -> None:
    capsys.readouterr()
    assert main(["audit", "--all", str(rendered)]) == 0
    out = capsys.readouterr().out
    assert "OK failover-ignores-deploys  failover: entry service api (failover.entry_service)" in out
    assert main(["audit", "--all", "--entry-service", "checkout", str(rendered)]) == 0
    assert "OK failover-ignores-deploys  failover: entry service checkout (failover.entry_service)" in \
        capsys.readouterr().out


def test_an_entry_service_no_workload_has_is_one_line_and_exit_2(rendered, capsys) -> None:
    capsys.readouterr()
    assert main(["audit", "--entry-service", "nope", str(rendered)]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "entry" in line]
    assert err == [f"lockstep audit: {rendered}/aws/failover.json:18: Route53HealthCheck failover-eu-west-health: "
                   "cannot tell the regional entry workload (no workload named 'nope'): set the policy config key "
                   "entry_service (lockstep audit: --entry-service NAME)"]
