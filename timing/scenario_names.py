"""The simulation's scenario names, in a module that imports nothing: the command line lists
them in `--help` without loading the simulation (`timing.simulate` maps each to its code)."""

# What `lockstep simulate` and `lockstep mutate` run unless asked for more.
DEFAULT_SCENARIOS = ("rollout", "replace", "crash", "quiet", "reload", "proxy-stop")
# Node disruptions (issue 13), run on request (`--scenario`, or `--scenario all`): each one more
# multiplies the mutator's work.
NODE_SCENARIOS = ("node-drain", "consolidation", "spot-interruption", "node-shutdown", "etp-local")
