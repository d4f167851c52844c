"""Which workload is the failover's regional entry: the one the Route 53 health check reaches.

A DNS failover's health check asks the region's entry (its ALB) for one path. The workload
that answers it is the one the ALB routes that path to: among the workloads behind an HTTP(S)
target group, those whose listener rule's path patterns match the check's path, the rule of
lowest priority number first (the ALB evaluates rules in priority order). ALB path patterns are
case-sensitive and know two wildcards, `*` (zero or more characters) and `?` (exactly one)
(ELBv2 listener rule `PathPatternConfig`). A configured `entry_service` wins; when the
resources do not single one out, the caller says it cannot tell, naming the setting.
"""

from __future__ import annotations

import re
from typing import Sequence, TypeVar

from lockstep.timing.lbkinds import KINDS
from lockstep.timing.model import Service

T = TypeVar("T")


def path_pattern_matches(pattern: str, path: str) -> bool:
    """An ALB listener rule's path pattern against a request path (its query string aside)."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, path.split("?", 1)[0], flags=re.DOTALL) is not None


def entry_workload(services: Sequence[tuple[Service, T]], health_path: str | None, wanted: str | None) -> T | None:
    """The entry among `services` (each with what the caller keeps for it): the one named
    `wanted`; else the only one behind an HTTP(S) target group; else, of those, the one the
    health check's path reaches. None: the resources do not tell."""
    if wanted:
        return next((item for svc, item in services if svc.name == wanted), None)
    http = [(svc, item) for svc, item in services if svc.lb is not None and "lb.protocol" not in svc.lb.unknown
            and svc.lb.protocol in KINDS[svc.lb.kind].http_protocols]
    if len(http) == 1:
        return http[0][1]
    if health_path is None:
        return None
    reached = [(svc, item) for svc, item in http
               if any(path_pattern_matches(p, health_path) for p in svc.lb.path_patterns)]  # type: ignore[union-attr]
    if len(reached) == 1:
        return reached[0][1]
    priorities = [svc.lb.rule_priority for svc, _ in reached]  # type: ignore[union-attr]
    if reached and None not in priorities and len(set(priorities)) == len(priorities):
        return min(reached, key=lambda pair: pair[0].lb.rule_priority)[1]  # type: ignore[union-attr]
    return None


def unreached(wanted: object, path: object) -> str:
    """Why no entry was found, for the one line that says so."""
    if wanted:
        return f" (no workload named {wanted!r})"
    return f" (no single workload behind an HTTP(S) target group serves the health check's path {path!r})"
