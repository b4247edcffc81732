"""FlareDTDG: hybrid batching with temporal decay over node partitions (``FlareStrategy``)."""

from dygsched.engine.flare.decay import SCHEDULES, decay_counts
from dygsched.engine.flare.strategy import FlareStrategy

__all__ = ["SCHEDULES", "FlareStrategy", "decay_counts"]
