"""DistDy: online partitioning onto additive graph stores, and sampled training on them (``DistDyStrategy``)."""

from dygsched.engine.distdy.strategy import DistDyStrategy

__all__ = ["DistDyStrategy"]
