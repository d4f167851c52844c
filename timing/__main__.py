import sys

from lockstep.timing.cli import main

sys.exit(main())
