"""The shipped seed-003 stack reproduces the field report's failures, named by id."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockstep.timing.cli import main

SEED = Path(__file__).resolve().parents[2] / "examples" / "Pulumi.seed003.yaml"


def test_seed_003_numbers_fail_check_with_the_drain_and_watchdog_rules(capsys):
    assert main(["check", str(SEED)]) == 1
    out = capsys.readouterr().out
    ids = sorted({line.split()[1] for line in out.splitlines() if line.startswith("ERROR")})
    assert ids == ["drain-covers-lb-detection", "recovery-within-budget",
                   "watchdog-tolerates-planned-drain"]


NODES = {  # examples/Pulumi.<name>.yaml: the example broken on purpose for one node rule (issue 13)
    "nodes-budget": ["node-budget-covers-drain"],
    "nodes-shutdown": ["node-shutdown-drains-without-endpoints"],
    "nodes-undrained": ["node-shutdown-drains-without-endpoints"],
    "nodes-eviction-gate": ["eviction-waits-for-lb"],
    "nodes-singleton": ["eviction-leaves-a-target"],
    "nodes-etp-local": ["etp-local-drain-covers-node-check"],
    "nodes-nlb-reset": ["nlb-connections-survive-removal"],
    "nodes-rollout-loss": ["heartbeat-rides-out-rollout"],
}


PATH_VARIANTS = {  # examples/Pulumi.<name>.yaml: the example broken on purpose for one path rule (issue 12)
    "path-node-keepalive": ["keepalive-chain-ordered"],
    "path-istio-idle": ["keepalive-chain-ordered"],
    "path-reload-cut": ["proxy-reload-spares-requests"],
    "path-controller-drain": ["proxy-reload-spares-requests"],
    "path-app-first": ["mesh-drain-covers-lb"],
    "path-read-timeout": ["timeouts-shrink-inward"],
    "path-linkerd-drain": ["mesh-drain-covers-lb", "sidecar-outlives-app"],
}


LINK_VARIANTS = {  # examples/Pulumi.<name>.yaml: the example broken on purpose for one link rule (issue 12)
    "links-grpc-pings": ["grpc-keepalive-fits-path"],
    "links-pool-lifetime": ["pool-retires-before-path"],
}


# Each family of examples/Pulumi.<family>-*.yaml, every file held to its ids.
VARIANTS = {"nodes": NODES, "path": PATH_VARIANTS, "links": LINK_VARIANTS}


@pytest.mark.parametrize("family", sorted(VARIANTS))
def test_every_variant_in_examples_is_held_to_its_ids(family) -> None:
    shipped = {p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in SEED.parent.glob(f"Pulumi.{family}-*.yaml")}
    assert shipped == set(VARIANTS[family])


@pytest.mark.parametrize(("name", "ids"), sorted(i for v in VARIANTS.values() for i in v.items()))
def test_a_broken_variant_fails_check_with_exactly_its_rules(name, ids, capsys) -> None:
    assert main(["check", str(SEED.parent / f"Pulumi.{name}.yaml")]) == 1
    out = capsys.readouterr().out
    assert sorted({line.split()[1] for line in out.splitlines() if line.startswith("ERROR")}) == ids


ARGO = SEED.with_name("Pulumi.argo-scale-down.yaml")


def test_the_argo_example_with_a_scale_down_delay_below_the_switch_fails_check_with_that_rule_alone(capsys):
    assert main(["check", str(ARGO)]) == 1
    out = capsys.readouterr().out
    errors = [line.split()[1:3] for line in out.splitlines() if line.startswith("ERROR")]
    assert errors == [["rollout-scale-down-outlasts-switch", "odds-stream:"]]
