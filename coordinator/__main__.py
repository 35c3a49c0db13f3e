"""`python -m coordinator ...`: the same as the `groupcoord` command."""

import sys

from coordinator.cli import main

sys.exit(main())
