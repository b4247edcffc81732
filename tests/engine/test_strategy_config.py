"""A strategy's typed configuration: the checks every field gets, and one place for each default."""

from __future__ import annotations

import dataclasses

import pytest
from omegaconf import OmegaConf

from dygsched.engine.distdy.config import DistDyConfig
from dygsched.engine.flare.config import FlareConfig
from dygsched.engine.node_memory.config import NodeMemoryConfig, SvenConfig
from dygsched.engine.strategy_config import StrategyConfig
from dygsched.errors import ConfigError
from tests.conftest import ROOT

SCHED = ROOT / "conf" / "sched"


def configured_strategies() -> list[str]:
    """The conf/sched files that name their configuration class (the others start from one of them)."""
    return sorted(p.stem for p in SCHED.glob("*.yaml") if OmegaConf.load(p).get("_target_"))


@dataclasses.dataclass(frozen=True)
class Example(StrategyConfig):
    count: int = 1
    share: float = 0.5
    flag: bool = False
    limit: int | None = None
    sizes: tuple[int, ...] = (2, 3)
    mode: str | tuple[int, ...] = "auto"


def test_values_are_held_as_their_fields_type():
    example = Example(share=1, sizes=[4, 5], mode=[3, 1])
    assert example.share == 1.0 and isinstance(example.share, float)
    assert example.sizes == (4, 5) and example.mode == (3, 1)
    assert Example.defaults() == {
        "_target_": "tests.engine.test_strategy_config.Example",
        "name": "",
        "count": 1,
        "share": 0.5,
        "flag": False,
        "limit": None,
        "sizes": [2, 3],
        "mode": "auto",
    }


@pytest.mark.parametrize(
    "options, message",
    [
        ({"count": "3"}, "sched.count must be an integer, got '3'"),
        ({"count": True}, "sched.count must be an integer, got True"),
        ({"share": "half"}, "sched.share must be a number, got 'half'"),
        ({"flag": 1}, "sched.flag must be true or false, got 1"),
        ({"limit": 2.5}, "sched.limit must be an integer or null, got 2.5"),
        ({"sizes": [1, "x"]}, "sched.sizes must be a list of integers, got [1, 'x']"),
        ({"mode": 3}, "sched.mode must be a string or a list of integers, got 3"),
        ({"cuont": 3}, "unknown key 'sched.cuont': Example has name, count, share, flag, limit, sizes, mode"),
    ],
)
def test_a_wrong_type_or_an_unknown_key_is_one_line_naming_it(options, message):
    with pytest.raises(ConfigError) as error:
        Example.from_config(options)
    assert str(error.value) == message


@pytest.mark.parametrize(
    "config, options, message",
    [
        (FlareConfig, {"chunks": 0}, "sched.chunks (chunks per rank) must be a positive integer"),
        (FlareConfig, {"alpha": 1.5}, "sched.alpha must lie in [0, 1]"),
        (FlareConfig, {"partition": "random"}, "unknown sched.partition 'random'"),
        (FlareConfig, {"overlap": "always"}, "unknown sched.overlap 'always'"),
        (FlareConfig, {"schedule": "steep"}, "unknown sched.schedule 'steep'"),
        (DistDyConfig, {"fanouts": []}, "sched.fanouts must be positive neighbour counts"),
        (DistDyConfig, {"partition": "random"}, "unknown sched.partition 'random'"),
        (DistDyConfig, {"capacity_factor": 0}, "sched.capacity_factor and sched.capacity_bytes must be positive"),
        (NodeMemoryConfig, {"batch_size": 0}, "sched.batch_size must be at least 1 event"),
        (SvenConfig, {"staleness": 2}, "sched.staleness must be 0 or 1"),
        (SvenConfig, {"partition": "metis"}, "unknown sched.partition 'metis'"),
        (SvenConfig, {"micro_batches": 0}, "sched.micro_batches must be at least 1"),
    ],
)
def test_each_strategy_refuses_a_value_out_of_range(config, options, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        config.from_config(options)


def test_every_config_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        FlareConfig().chunks = 4  # type: ignore[misc]


@pytest.mark.parametrize("name", configured_strategies())
def test_the_yaml_restates_no_default_and_composes_into_its_configuration_class(name):
    """conf/sched/<name>.yaml names its configuration class; every setting and its default comes from
    the dataclass, and the composed block is that class, which builds the strategy."""
    from dygsched.engine.build import build_strategy
    from dygsched.launch.compose import compose_run
    from dygsched.typed_config import load_class

    raw = OmegaConf.load(SCHED / f"{name}.yaml")
    assert set(raw) == {"defaults", "_target_", "name"}
    config_type = load_class(raw["_target_"], "sched")
    composed = compose_run([f"sched={name}"]).sched
    assert composed == config_type(name=name) and type(composed) is config_type
    strategy = build_strategy(composed)
    assert strategy.config is composed and strategy.name == name
