"""The lockstep policy pack: `pulumi preview --policy-pack policies`.

Constructing a `PolicyPack` starts the policy server and blocks, so it happens only here;
the policies themselves live in `policies.rules` (importable and tested without the engine).
"""

from pulumi_policy import EnforcementLevel, PolicyPack
from pulumi_policy import policy as _pulumi_policy

from lockstep.policies.findings import serve_requests
from lockstep.policies.rules import all_policies

# Every stack policy of one AnalyzeStack links and judges the same resources: keyed by the
# request, the second and later ones reuse the first one's answer without converting the
# resources again (pulumi-policy builds them anew for each policy). Without the servicer class
# (another pulumi-policy), they compare the converted resources instead: the same answers.
serve_requests(getattr(_pulumi_policy, "_PolicyAnalyzerServicer", object))

PolicyPack(
    name="lockstep",
    policies=all_policies(),
    enforcement_level=EnforcementLevel.MANDATORY,
)
