"""``python -m interp_heads.cli``: the same as ``interp-heads``."""

import sys

from interp_heads.cli import main

sys.exit(main())
