"""The one linker, shared by `lockstep audit` and the policy pack.

Each front end adapts its input to neutral `Resource`s (`resource`), `link.link` decides which
belong together as Kubernetes and the AWS Load Balancer Controller do, and `judge.judge` runs
the registry's rules on what it linked. The same resources therefore always get the same
findings, whichever front end read them (`tests/policies/test_one_verdict.py` holds it).
"""
