"""The lockstep policy pack: `pulumi preview --policy-pack policies`.

Constructing a `PolicyPack` starts the policy server and blocks, so it happens only here;
the policies themselves live in `policies.rules` (importable and tested without the engine).
"""

from pulumi_policy import EnforcementLevel, PolicyPack

from lockstep.policies.rules import all_policies

PolicyPack(
    name="lockstep",
    policies=all_policies(),
    enforcement_level=EnforcementLevel.MANDATORY,
)
