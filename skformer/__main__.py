"""Run the command line with ``python -m skformer``."""

from skformer.cli import main

raise SystemExit(main())
