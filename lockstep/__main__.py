"""`python -m lockstep`: the same entry point as the `lockstep` command."""
from lockstep.timing.cli import entry

entry()
