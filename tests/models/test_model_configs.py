"""conf/model/*.yaml build the models the way the engine does: drop ``name``, pass the data's sizes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from dygsched.models import DGNN, GATLSTM, GCLSTM, MPNNLSTM, TGCN, WDGCN, EvolveGCNH, EvolveGCNO
from dygsched.models.sage_temporal import SAGETemporal

CONF = Path(__file__).resolve().parents[2] / "conf" / "model"
EXPECTED = {
    "tgcn": TGCN,
    "wdgcn": WDGCN,
    "evolvegcn_o": EvolveGCNO,
    "evolvegcn_h": EvolveGCNH,
    "gat_lstm": GATLSTM,
    "mpnn_lstm": MPNNLSTM,
    "gclstm": GCLSTM,
}


def test_there_is_one_config_per_model() -> None:
    assert sorted(path.stem for path in CONF.glob("*.yaml")) == sorted(
        [*EXPECTED, "sage_temporal", "tgn", "jodie", "apan", "edgebank", "persistent", "moving_average"]
    )


def test_distdy_model_config_instantiates_a_sampled_encoder_reading_the_run_window() -> None:
    cfg = OmegaConf.merge({"window": 6}, {"model": OmegaConf.load(CONF / "sage_temporal.yaml")})
    params = {key: value for key, value in OmegaConf.to_container(cfg, resolve=True)["model"].items() if key != "name"}
    model = instantiate(params, in_channels=5, out_channels=1)
    assert type(model) is SAGETemporal and model.window == 6 and len(model.convs) == cfg.model.num_layers


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_config_instantiates_its_model(name: str) -> None:
    cfg = OmegaConf.load(CONF / f"{name}.yaml")
    assert cfg.name == name
    assert cfg.hidden_channels == 64
    cfg = OmegaConf.masked_copy(cfg, [key for key in cfg if key != "name"])
    model = instantiate(cfg, in_channels=5, out_channels=3)
    assert type(model) is EXPECTED[name]
    assert isinstance(model, DGNN)
    assert len(model.layers) == cfg.num_layers
    assert model.layers[0].in_channels == 5
    assert model.head.out_features == 3
