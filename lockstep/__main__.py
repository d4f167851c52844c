"""`python -m lockstep`: the same entry point as the `lockstep` command."""
import sys

from lockstep.timing.cli import main

sys.exit(main())
