"""Every config group option composes into the typed run, and instantiates what it names."""

from pathlib import Path

import pytest
import torch

from dygsched.errors import ConfigError
from dygsched.launch.compose import compose_config, compose_run

CONF = Path(__file__).resolve().parents[1] / "conf"


def options(group):
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


@pytest.mark.parametrize("group", ["dataset", "model", "sched", "launcher"])
def test_every_option_composes(group):
    assert options(group), f"no configs in conf/{group}"
    for name in options(group):
        run = compose_run([f"{group}={name}", *SETTINGS_NEEDED.get(name, [])])
        assert getattr(run, group).name == name


# a config whose file leaves a setting to the command line (``???``) composes once it is given
SETTINGS_NEEDED = {"stream": ["dataset.path=events.csv"], "snapshots": ["dataset.path=snapshots.pt"]}


MEMORY_MODELS = ("tgn", "jodie", "apan")


@pytest.mark.parametrize("name", options("model"))
def test_every_model_instantiates(name):
    from dygsched.data.synthetic import SyntheticSource
    from dygsched.engine.build import build_model

    graph = SyntheticSource(num_nodes=30, num_snapshots=4, feature_dim=4).load()
    if name in MEMORY_MODELS:  # continuous-time: built from an event stream, scored on event pairs
        from dygsched.data.events import events_from_arrays

        stream = events_from_arrays("toy", [0, 1, 2], [1, 2, 0], [1.0, 2.0, 3.0], num_nodes=30)
        model = build_model(compose_run([f"model={name}"]).model, stream)
        assert model.num_nodes == 30 and model.memory_dim > 0
        return
    if name in ("edgebank", "persistent", "moving_average"):  # continuous-time, parameter-free: links' and labels' floors
        from dygsched.data.events import events_from_arrays

        stream = events_from_arrays("toy", [0, 1, 2], [1, 2, 0], [1.0, 2.0, 3.0], num_nodes=30)
        model = build_model(compose_run([f"model={name}"]).model, stream)
        assert model.num_nodes == 30 and list(model.parameters()) == []
        return
    model = build_model(compose_run([f"model={name}", "model.hidden_channels=8"]).model, graph)
    if hasattr(model, "encode"):  # DistDy's sampled encoder: every node a target, its whole neighbourhood one block
        blocks = [(snapshot.edge_index, 30) for snapshot in graph.snapshots[:1]] * len(model.convs)
        embeddings = torch.stack([model.encode(s.x, blocks) for s in graph.snapshots[-model.window :]], dim=1)
        assert model.predict(embeddings).shape == (30,)
    else:
        assert model(graph.snapshots).shape == (30,)


def test_unknown_name_is_one_clear_line():
    with pytest.raises(ConfigError, match="dataset/nope") as info:
        compose_config(["dataset=nope"])
    assert "\n" not in str(info.value)


def test_default_is_the_embedded_synthetic_dataset():
    run = compose_run([])
    assert run.dataset.name == "synthetic" and run.model.name == "tgcn" and run.sched.name == "psg"


@pytest.mark.parametrize(
    "overrides",
    [[f"+experiment={name}"] for name in options("experiment")]
    + [["+experiment=flare", f"+flare_variant={name}"] for name in options("flare_variant")]
    + [["+experiment=ablation", f"+ablation={name}"] for name in options("ablation")],
    ids=lambda overrides: " ".join(overrides),
)
def test_every_experiment_and_variant_composes_into_a_strategy(overrides):
    run = compose_run(overrides)
    assert run.sched.build().name == run.sched.name


@pytest.mark.parametrize(
    ("experiment", "smoke"),
    [
        (["+experiment=epoch_time"], "snapshots"),
        (["+experiment=flare"], "flare"),
        (["+experiment=flare_small"], "flare"),
        (["+experiment=distdy"], "distdy"),
        (["dataset=events", "model=tgn", "sched=sven"], "events"),
    ],
)
def test_smoke_sizes_override_the_experiment(experiment, smoke):
    """make paper SMOKE=1 appends +smoke=<kind> after a target's experiment: the tiny sizes win."""
    full = compose_run(experiment)
    small = compose_run([*experiment, f"+smoke={smoke}"])
    assert small.epochs < full.epochs and not small.checkpoint
    if small.dataset.settings.get("num_nodes") is not None:
        assert small.dataset.settings["num_nodes"] < full.dataset.settings["num_nodes"]
        assert small.dataset.settings["num_snapshots"] // small.window >= 1


def test_every_top_level_default_lives_in_the_typed_run():
    """conf/config.yaml only picks the groups: each top-level key's default is RunConfig's, and nowhere else."""
    from omegaconf import OmegaConf

    from dygsched.engine.run_config import RunConfig

    assert set(OmegaConf.load(CONF / "config.yaml")) == {"defaults", "hydra"}
    groups = {"dataset", "model", "sched", "optim", "launcher"}
    composed = compose_run([]).to_container()
    assert {k: v for k, v in composed.items() if k not in groups} == {
        k: v for k, v in RunConfig.defaults().items() if k not in groups
    }
