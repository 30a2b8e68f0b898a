"""``python -m benchmarks.cost``: the same as ``skformer bench cost``."""

from benchmarks.cost.cli import main

raise SystemExit(main())
