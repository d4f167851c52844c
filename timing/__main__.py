import sys

from timing.cli import main

sys.exit(main())
