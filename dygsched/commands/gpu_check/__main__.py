"""``python -m dygsched.commands.gpu_check``: the check (``cli.main``); a probe rank is the same with ``--probe-rank``."""

import sys

from dygsched.commands.gpu_check.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
