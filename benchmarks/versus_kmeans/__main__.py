"""``python -m benchmarks.versus_kmeans``: the same as ``skformer bench kmeans``."""

from benchmarks.versus_kmeans.cli import main

raise SystemExit(main())
