import sys

from dygsched.cli import main

sys.exit(main())
