"""``python -m benchmarks.anchors``: the same as ``skformer bench anchors``."""

from benchmarks.anchors.cli import main

raise SystemExit(main())
