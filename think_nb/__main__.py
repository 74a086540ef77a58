"""`python -m think_nb ...` is the `think-nb` command."""

import sys

from think_nb.frontends.cli import main

sys.exit(main())
