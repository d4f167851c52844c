"""The `infra.render.record` contract the render command and the policy-pack tests rely on."""

from __future__ import annotations

from pulumi.runtime.settings import get_root_resource

from lockstep.infra.render import MOCK_SUFFIX, SECRET_MARK, record
from tests.infra.support import example_values


def test_record_returns_components_and_resources_once_each_in_registration_order(recorded):
    urns = [r.urn for r in recorded]
    assert len(urns) == len(set(urns))
    assert recorded[0].type == "lockstep:infra:Namespaces" and not recorded[0].custom
    positions = {r.urn: i for i, r in enumerate(recorded)}
    for r in recorded:
        if r.parent in positions:
            assert positions[r.parent] < positions[r.urn], f"{r.urn} recorded before its parent"


def test_inputs_use_engine_names_and_aws_resources_get_stand_in_arns(recorded):
    tg = recorded.one("TargetGroup", "api-tg")
    assert "healthCheck" in tg.inputs and "deregistrationDelay" in tg.inputs
    assert tg.arn.endswith(MOCK_SUFFIX)
    deployment = recorded.one("Deployment", "api-deployment")
    assert deployment.inputs["apiVersion"] == "apps/v1" and deployment.arn is None


def test_a_secret_is_recorded_only_as_its_shape():
    secret = next(r for r in record(example_values(), {"rabbitmq_url": "amqp://u:p@h/"})
                  if r.kind == "Secret")
    assert secret.secret_paths == ("stringData",)
    assert set(secret.inputs["stringData"].values()) == {SECRET_MARK}


def test_repeated_runs_do_not_share_a_root_stack_or_its_transformations():
    first = record(example_values())
    second = record(example_values())
    assert [r.urn for r in first] == [r.urn for r in second]
    assert [r.depends_on for r in first] == [r.depends_on for r in second]
    assert len(get_root_resource()._transformations) == 1
