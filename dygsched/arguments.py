"""The commands' argument parsers: argparse's, but a usage error is one ``dygsched: error:`` line
(argparse prints the whole usage before it) with argparse's own exit status, 2."""

from __future__ import annotations

import argparse
from typing import NoReturn


class CommandParser(argparse.ArgumentParser):
    """An ``argparse.ArgumentParser`` whose usage errors (a missing value, an unknown option, a value
    of the wrong type, ``parser.error``) are one line naming the command, then exit 2. Subcommands'
    parsers are of the same class (``add_subparsers`` makes them so)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"dygsched: error: {self.prog}: {message} (see {self.prog} --help)\n")
