"""Sequential loops over numpy arrays, compiled where numba is installed.

Some algorithms are sequential by definition: DistDy's refinement moves one node at a time, and
each move changes the next node's payoff. Such a loop is written once, as plain Python over numpy
arrays and scalars, and decorated with ``compiled``: numba compiles it to machine code on its first
call (cached on disk beside the module), and without numba the same function runs as Python, with
the same results, only slower. ``COMPILED`` says which one runs; ``python(function)`` gives the
uncompiled function (the tests compare the two).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

try:  # numba is a dependency of the project; the fallback keeps the planner importable without it
    import numba
except ImportError:  # pragma: no cover - depends on the environment
    COMPILED = False
else:
    COMPILED = True

F = TypeVar("F", bound=Callable[..., Any])


def compiled(function: F) -> F:
    """``function`` compiled by numba (nopython mode, cached), or ``function`` itself without numba."""
    if not COMPILED:  # pragma: no cover - depends on the environment
        return function
    return cast(F, numba.njit(cache=True, nogil=True)(function))  # a numba Dispatcher, called as function is


def python(function: Callable[..., Any]) -> Callable[..., Any]:
    """The plain Python behind a ``compiled`` function."""
    return getattr(function, "py_func", function)
