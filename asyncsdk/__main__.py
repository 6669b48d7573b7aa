"""``python -m asyncsdk``: the command line (see ``asyncsdk.cli``)."""

import sys

from .cli import main

sys.exit(main())
