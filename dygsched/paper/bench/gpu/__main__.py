"""``python -m dygsched.paper.bench.gpu``: the GPU benchmark (``cli.main``)."""

import sys

from dygsched.paper.bench.gpu.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
