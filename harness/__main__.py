"""``python -m harness``: the kraft-chaos command line (see :mod:`harness.cli`)."""
import sys

from harness.cli import main

if __name__ == "__main__":
    sys.exit(main())
