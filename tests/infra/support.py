"""Helpers for the infra tests: render a stack through `infra.render.record` (the recorder
`lockstep render` and the policy-pack tests share) and look resources up by kind and name,
failing with the URNs that do exist."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from lockstep.infra.render import Recorded, record
from lockstep.timing.config import EXAMPLE, lockstep_values

SENTINEL = "amqp://lockstep:s3ntinel-Pa55w0rd@rabbitmq.heartbeat.svc:5672/%2F"


def example_values() -> dict[str, Any]:
    return copy.deepcopy(lockstep_values(yaml.safe_load(EXAMPLE.read_text())["config"]))


class Resources(list):
    """The recorded resources with lookups that fail naming what exists."""

    def of(self, kind: str) -> list[Recorded]:
        return [r for r in self if r.custom and r.kind == kind]

    def one(self, kind: str, name: str) -> Recorded:
        found = [r for r in self.of(kind) if r.name == name]
        assert len(found) == 1, f"expected one {kind} named {name}; have {[r.urn for r in self.of(kind)]}"
        return found[0]

    def k8s(self, kind: str, namespace: str, name: str) -> Recorded:
        found = [r for r in self.of(kind) if r.inputs["metadata"]["name"] == name
                 and r.inputs["metadata"].get("namespace") == namespace]
        assert len(found) == 1, f"expected one {kind} {namespace}/{name}; have {[r.urn for r in self.of(kind)]}"
        return found[0]

    def by_urn(self, urn: str) -> Recorded:
        return next(r for r in self if r.urn == urn)


def render(values: dict[str, Any], secrets: dict[str, str] | None = None) -> Resources:
    return Resources(record(values, secrets))


