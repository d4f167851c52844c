"""lockstep: keep the timeouts along a service's delivery path in step, and prove it.

The one top-level import name. Its subpackages are the repository's top-level folders
`timing/`, `infra/`, `policies/` and `heartbeat/`: this folder holds a link to each (a
checkout keeps the layout Pulumi's `main: infra/` and the design fix), and a wheel holds
them as real folders under `lockstep/`.
"""
