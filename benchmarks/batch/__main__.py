"""``python -m benchmarks.batch``: run the batch benchmark."""

from . import main

raise SystemExit(main())
