"""``python -m workstation``: the same program as the ``workstation`` command (its advice names
this way of starting it, as typed)."""

from __future__ import annotations

import os
import sys

from workstation.core.invocation import ENV, shell_word
from workstation.launch import main

if __name__ == "__main__":
    os.environ.setdefault(ENV, f"{shell_word(sys.executable)} -m workstation")
    sys.exit(main())
