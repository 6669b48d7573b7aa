"""``python -m benchmarks [--quick] [--no-write] [--only NAME ...]``."""

import sys

from .run import main

sys.exit(main())
