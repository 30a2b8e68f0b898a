"""``python -m benchmarks.shapes``: the same as ``skformer bench shapes``."""

from benchmarks.shapes.cli import main

raise SystemExit(main())
