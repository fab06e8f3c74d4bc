"""``python -m chemgraph`` is the ``chemgraph`` command."""

import sys

from chemgraph.cli import main

sys.exit(main())
