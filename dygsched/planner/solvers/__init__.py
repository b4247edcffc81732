"""The built-in solvers, one module each; every module here registers its ``Solver`` on import.

A new solver is one more file in this folder: a ``Solver`` subclass with a ``name``, decorated
with ``@register_solver`` (see ``dygsched.planner.base``). Nothing else lists it.
"""
