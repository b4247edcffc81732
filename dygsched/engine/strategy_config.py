"""A strategy's configuration: the class its ``sched`` block composes into, and what builds the strategy.

Every strategy is named by ``conf/sched/<name>.yaml``, whose ``_target_`` is its configuration
class, a frozen ``StrategyConfig`` dataclass (``dygsched.typed_config.Typed``): flat settings
(FlareDTDG's ``chunks``, DistDy's ``fanouts``) and typed blocks (the snapshot-group strategies'
``planner`` and ``timeline``) as fields, ``_target_`` parts (their ``executor``) as ``Part`` fields.
It is the one place of each setting's type and default: ``dygsched.launch.compose`` registers its
defaults as the config ``strategy_config/<Class>``, which the yaml starts from, so the composed
``sched`` block has every setting (``sched.chunks=8`` overrides one) and the yaml restates none.
``__post_init__`` checks each value against its field's annotation, so a subclass checks only
ranges and choices; anything wrong is one ``ConfigError`` line naming ``sched.<name>``.

``build()`` is the one way a strategy is made: it imports the class ``strategy`` names
(``package.module:Class``, a ``Strategy``) and hands it this configuration. A subclass of a
configuration may bind another piece (the node-memory strategies' backend) the same way.

This module imports no torch, nor do the strategies' config modules at import: the CLI types a
run before it imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from dygsched.components import load_target
from dygsched.errors import ConfigError
from dygsched.typed_config import Typed

if TYPE_CHECKING:
    from dygsched.engine.strategy import Strategy


@dataclass(frozen=True)
class StrategyConfig(Typed):
    """Base of every strategy's configuration (see the module docstring). ``name``: the
    ``conf/sched`` file's, by which runs, tables and messages name the strategy."""

    key: ClassVar[str] = "sched"
    selected: ClassVar[bool] = True
    strategy: ClassVar[str] = ""  # the Strategy class it builds, package.module:Class (imported by build)

    name: str = ""

    def build(self) -> Strategy:
        """The strategy this configuration describes (its class imported now)."""
        from dygsched.engine.strategy import Strategy

        if not self.strategy:
            raise ConfigError(f"sched '{self.name}': {type(self).__name__} names no strategy class to build")
        built: Any = load_target(self.strategy)
        if not (isinstance(built, type) and issubclass(built, Strategy)):
            raise ConfigError(f"sched '{self.name}': {self.strategy} is not a dygsched Strategy")
        strategy: Strategy = built(self)
        return strategy
