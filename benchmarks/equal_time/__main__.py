"""``python -m benchmarks.equal_time``: the same as ``skformer bench equal-time``."""

from benchmarks.equal_time.cli import main

raise SystemExit(main())
