"""``python -m dpmean``: the same command line as the installed ``dpmean`` script."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
