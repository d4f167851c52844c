"""Which controller makes a load balancer from an Ingress or a LoadBalancer Service, as data.

- The AWS Load Balancer Controller (LBC): IngressClass controller `ingress.k8s.aws/alb`
  (an Ingress of class `alb` with no IngressClass in the input is taken for it, as before),
  Services of `loadBalancerClass: service.k8s.aws/nlb` or annotated `aws-load-balancer-type:
  external` / `nlb-ip`. Since LBC v2.5 its Service mutating webhook (on by default,
  `enableServiceMutatorWebhook`) gives every new `type: LoadBalancer` Service without a class
  that class, so a plain Service is an LBC NLB there: the audit cannot see the webhook, so
  the user says so (`--assume-lbc-services`).
- EKS Auto Mode (AWS EKS user guide, "Create an IngressClass to configure an Application Load
  Balancer" and "Use Service Annotations to configure Network Load Balancers"): IngressClass
  controller `eks.amazonaws.com/alb` with IngressClassParams of `eks.amazonaws.com/v1`; NLBs by
  `loadBalancerClass: eks.amazonaws.com/nlb`, which Auto Mode makes the cluster default for
  `type: LoadBalancer` Services. It runs the same controller: its docs list the LBC's Ingress
  and Service annotations (`alb.ingress.kubernetes.io/*`, `service.beta.kubernetes.io/aws-
  load-balancer-*`, health check protocol TCP by default) and name no other health-check,
  target-type or deregistration defaults, so the LBC's (`timing.lbkinds`) apply; what differs
  is where a few settings live (groups and load balancer attributes in IngressClassParams,
  the `aws-load-balancer-type` annotation not supported).
"""

from __future__ import annotations

from typing import Final

LBC: Final = "AWS Load Balancer Controller"
AUTO_MODE: Final = "EKS Auto Mode"
ALB_CONTROLLERS: Final = {"ingress.k8s.aws/alb": LBC, "eks.amazonaws.com/alb": AUTO_MODE}
NLB_CLASSES: Final = {"service.k8s.aws/nlb": LBC, "eks.amazonaws.com/nlb": AUTO_MODE}
# `lb.attach_to_arn` of a target group the controller makes and attaches itself (from an Ingress
# or a LoadBalancer Service): what the readers put there, and what the model fills in for a
# stack's canary routed by the ALB, whose Ingress infra renders (`model.fill_canary_attachment`).
LBC_ATTACHED: Final = f"attached by the {LBC}"
LEGACY_ALB_CLASS: Final = "alb"  # the LBC's class name before IngressClass resources
