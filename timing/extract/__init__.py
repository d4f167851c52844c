"""Resources → model pieces: the one translation, shared by the policy pack and `audit`.

One module per source: Kubernetes workloads and probes (`kube`), AWS target groups and the
`describe` JSON (`aws`), the AWS Load Balancer Controller's annotations (`lbc`), Route 53
(`route53`), the heartbeat ConfigMap (`heartbeat`), the `lockstep.dev/*` facts
(`annotations`), and the plumbing they share (`values`). Which resources belong together is
not decided here: that is `timing.bind`, the one linker.
"""

from __future__ import annotations

from lockstep.timing.extract.values import (RANGE_ERRORS, ExtractError, get, items, number, digits, int_or_percent, num, amount, put, bound, clamped, build, describe, port_number, port_at, annotation_number)  # noqa: F401
from lockstep.timing.extract.annotations import (seconds_annotation, app_facts, accepts, annotations_of)  # noqa: F401
from lockstep.timing.extract.kube import (SLEEP, UNIT, handler, PROBE_FIELDS, probe, container_ports, probes, sleep_seconds, prestop, serving_container, pod_shutdown, rollout, pdb, hpa, hpa_target, selects, expression_holds, replica_count, workload, serving_port, probe_port)  # noqa: F401
from lockstep.timing.extract.argo import (STRATEGIES, strategy_of, argo_rollout_pace, argo_strategy, alb_routing)  # noqa: F401
from lockstep.timing.extract.aws import (HTTP_PROTOCOLS, lb_kind, HC_FIELDS, health_check, rule_routing, target_group, Binding, binding, attribute_number, DESCRIBED_HEALTH_CHECK, attribute_map, described_target_group)  # noqa: F401
from lockstep.timing.extract.route53 import (route53_check, failover)  # noqa: F401
from lockstep.timing.extract.heartbeat import (heartbeat_config, heartbeat_specs, heartbeat_service)  # noqa: F401
from lockstep.timing.extract.lbc import (ALB_ANNOTATION, NLB_ANNOTATION, LBC_MANAGED, LBC_ANNOTATIONS, string_map, choice, prefixed, alb_annotations, nlb_managed, lbc_target_group)  # noqa: F401
