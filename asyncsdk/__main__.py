"""``python -m asyncsdk``: the command line (see ``asyncsdk.cli``)."""

import sys

from .cli.app import main

sys.exit(main())
