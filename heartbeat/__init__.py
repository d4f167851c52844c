"""The heartbeat service (seed 000): watch the observable workloads, block a business scope
when its workload stays unhealthy for its loss time, and tell the clients only afterwards.

Pure core (only `timing` and the standard library): `observe` (health of one workload),
`decide` (loss/recovery clocks per spec), `core` (both, with memory), `messages` (JSON).
Adapters: `kube` (Kubernetes API), `publish` (RabbitMQ via pika), `leader` (Lease election).
Shell: `runtime` (the loop), `http` (probes), `cli` (`lockstep heartbeat`), `dryrun`.
"""
