"""The per-kind table (`timing/lbkinds.py`): each row pinned to the upstream facts it cites,
and no code outside the table telling kinds apart by name."""

from __future__ import annotations

import re
from pathlib import Path

from lockstep.timing import limits as L
from lockstep.timing.lbkinds import ALB, KINDS, NLB, kind_of

ROOT = Path(__file__).resolve().parents[2]


def test_the_alb_row_holds_the_controllers_and_the_apis_defaults() -> None:
    assert ALB.protocols == ("HTTP", "HTTPS") and ALB.http_protocols == ALB.protocols
    assert dict(ALB.lbc_defaults) == {"interval_s": 15, "timeout_s": 5, "healthy_threshold": 2,
                                      "unhealthy_threshold": 2, "target_type": "instance", "idle_timeout_s": 60}
    assert dict(ALB.api_defaults) == {"interval_s": 30, "timeout_s": 5, "healthy_threshold": 5, "unhealthy_threshold": 2}
    assert ALB.idle_timeout == {"HTTP": L.Range(1, 4000), "HTTPS": L.Range(1, 4000)} and ALB.idle_timeout_from_lb
    assert (ALB.slow_start, ALB.timeout_below_interval, ALB.attaches_by) == (True, True, "listener rule")
    assert dict(ALB.propagation) == {"deregistration_propagation_s": 15, "registration_propagation_s": 15}
    assert (ALB.http_matcher, ALB.health_check_protocol) == ("200", "HTTP")


def test_the_nlb_row_holds_the_tcp_and_tls_idle_timeouts_and_no_slow_start() -> None:
    assert NLB.protocols == ("TCP", "TLS") and NLB.http_protocols == ()
    assert NLB.idle_timeout == {"TCP": L.Range(60, 6000), "TLS": L.Range(350, 350)}
    assert dict(NLB.idle_timeout_default) == {"TCP": 350, "TLS": 350} and not NLB.idle_timeout_from_lb
    assert dict(NLB.lbc_defaults) == {"interval_s": 10, "timeout_s": 10, "healthy_threshold": 3,
                                      "unhealthy_threshold": 3, "target_type": "instance"}
    assert dict(NLB.api_defaults) == {"interval_s": 30, "timeout_s": 10, "healthy_threshold": 5, "unhealthy_threshold": 2}
    assert (NLB.slow_start, NLB.timeout_below_interval, NLB.attaches_by) == (False, False, "listener")
    assert dict(NLB.propagation) == {"deregistration_propagation_s": 120, "registration_propagation_s": 120}
    assert (NLB.http_matcher, NLB.health_check_protocol, NLB.legacy_ip_type) == ("200-399", "TCP", "nlb-ip")


def test_every_protocol_belongs_to_exactly_one_kind() -> None:
    for kind in KINDS.values():
        for protocol in kind.protocols:
            assert kind_of(protocol) is kind
    assert kind_of("UDP") is None and kind_of(None) is None
    assert L.IDLE_TIMEOUT.hi == max(r.hi for k in KINDS.values() for r in k.idle_timeout.values())


def test_no_code_outside_the_table_compares_a_kind_name() -> None:
    """`lb.kind == "alb"` and friends: the table answers such questions. The simulation is left
    out on purpose: it is an oracle independent of the rules and their tables, and states the
    behaviour it models itself."""
    compare = re.compile(r"""kind\s*[!=]=\s*["'](?:alb|nlb)["']|["'](?:alb|nlb)["']\s*[!=]=\s*[\w.]*kind""")
    found = [f"{p.relative_to(ROOT)}:{n}" for folder in ("timing", "infra", "policies")
             for p in (ROOT / folder).rglob("*.py") if p.name != "lbkinds.py" and "sim" not in p.parts
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if compare.search(line)]
    assert found == []
