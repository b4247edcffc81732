"""Every model, with 1 to 3 layers: shapes, gradients, determinism, learning, size checks."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import torch

from dygsched.data.temporal_graph import Snapshot
from dygsched.models import DGNN, GATLSTM, GCLSTM, MPNNLSTM, TGCN, WDGCN, EvolveGCNH, EvolveGCNO
from dygsched.models.ops import gcn_aggregate
from tests.models.snapshots import changing_group, random_snapshot

IN_CHANNELS = 4
HIDDEN = 8

# Small but non-trivial settings; dropout off so that gradients and the learning test are stable.
MODELS: dict[str, tuple[type[DGNN], dict[str, Any]]] = {
    "tgcn": (TGCN, {}),
    "wdgcn": (WDGCN, {}),
    "evolvegcn_o": (EvolveGCNO, {}),
    "evolvegcn_h": (EvolveGCNH, {}),
    "gat_lstm": (GATLSTM, {"heads": 2}),
    "mpnn_lstm": (MPNNLSTM, {"dropout": 0.0}),
    "gclstm": (GCLSTM, {"K": 3}),
}
NAMES = sorted(MODELS)
# The models whose first layer has a convolution of its input to reuse (``DGNNLayer.reuse``): all but GC-LSTM.
REUSABLE = [name for name in NAMES if name != "gclstm"]


def build(name: str, out_channels: int = 1, num_layers: int = 2, seed: int = 0, **overrides: Any) -> DGNN:
    cls, kwargs = MODELS[name]
    torch.manual_seed(seed)
    return cls(IN_CHANNELS, out_channels, hidden_channels=HIDDEN, num_layers=num_layers, **{**kwargs, **overrides})


@pytest.mark.parametrize("num_layers", [1, 2, 3])
@pytest.mark.parametrize("name", NAMES)
def test_output_shapes_on_changing_node_sets(name: str, num_layers: int) -> None:
    regression = build(name, out_channels=1, num_layers=num_layers)
    assert len(regression.layers) == num_layers
    out = regression(changing_group())
    assert out.shape == (12,)
    assert torch.isfinite(out).all()

    classifier = build(name, out_channels=3, num_layers=num_layers)
    logits = classifier(changing_group(classes=3))
    assert logits.shape == (12, 3)
    assert torch.isfinite(logits).all()


@pytest.mark.parametrize("num_layers", [1, 2, 3])
@pytest.mark.parametrize("name", NAMES)
def test_gradients_reach_every_parameter(name: str, num_layers: int) -> None:
    model = build(name, num_layers=num_layers)
    snapshots = changing_group(seed=1)
    last = snapshots[-1]
    loss = (model(snapshots) - last.y)[last.node_mask].pow(2).mean()
    loss.backward()
    for pname, param in model.named_parameters():
        assert param.grad is not None, f"{name}: no gradient for {pname}"
        assert torch.isfinite(param.grad).all(), f"{name}: non-finite gradient for {pname}"
        assert param.grad.abs().sum() > 0, f"{name}: zero gradient for {pname}"


def tensors_in(value: Any) -> list[torch.Tensor]:
    """The tensors of a spatial output: a tensor, or tuples and frozen dataclasses of them (GC-LSTM's)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, tuple):
        return [t for item in value for t in tensors_in(item)]
    if dataclasses.is_dataclass(value):
        return [t for field in dataclasses.fields(value) for t in tensors_in(getattr(value, field.name))]
    return []


@pytest.mark.parametrize("name", NAMES)
def test_state_is_a_tuple_of_tensors_and_spatial_does_not_read_it(name: str) -> None:
    """The engine ships states between ranks and may cache ``spatial`` outputs (REAL)."""
    model = build(name, num_layers=2).eval()
    snapshot = changing_group()[0]
    states = model.initial_states(snapshot.num_nodes, snapshot.x.device)
    x = snapshot.x
    for layer, state in zip(model.layers, states, strict=True):
        assert isinstance(state, tuple) and state and all(isinstance(t, torch.Tensor) for t in state)
        out_a = layer.spatial(x, snapshot.edge_index, snapshot.edge_weight, state)
        noisy = tuple(torch.randn_like(t) for t in state)
        out_b = layer.spatial(x, snapshot.edge_index, snapshot.edge_weight, noisy)
        parts_a, parts_b = tensors_in(out_a), tensors_in(out_b)
        assert parts_a and len(parts_a) == len(parts_b)
        for a, b in zip(parts_a, parts_b, strict=True):
            assert torch.equal(a, b)
        x, new_state = layer.temporal(out_a, state)
        assert x.shape == (snapshot.num_nodes, layer.out_channels)
        assert isinstance(new_state, tuple)
        assert [t.shape for t in new_state] == [t.shape for t in state]


@pytest.mark.parametrize("name", NAMES)
def test_deterministic_for_a_seed(name: str) -> None:
    kwargs = {"dropout": 0.3} if name == "mpnn_lstm" else {}  # dropout too must follow the seed
    outputs = []
    for seed in (0, 0, 1):
        model = build(name, seed=seed, **kwargs)
        torch.manual_seed(seed)
        outputs.append(model(changing_group()))
    assert torch.equal(outputs[0], outputs[1])
    assert not torch.allclose(outputs[0], outputs[2])


def learnable_group(seed: int) -> list[Snapshot]:
    """Targets that depend on the last graph: y = (A x)[:, 0] + x[:, 1], A the GCN-normalised adjacency.

    (EvolveGCN keeps no per-node memory, so a target read from an earlier snapshot would not be
    learnable by every model; the recurrences are checked against references in test_parity.py.)
    """
    generator = torch.Generator().manual_seed(seed)
    snapshots = [random_snapshot(16, IN_CHANNELS, 40, generator) for _ in range(2)]
    last = snapshots[-1]
    y = gcn_aggregate(last.x, last.edge_index, last.edge_weight)[:, 0] + last.x[:, 1]
    snapshots[-1] = Snapshot(last.edge_index, last.edge_weight, last.x, y, last.node_mask)
    return snapshots


@pytest.mark.parametrize("name", NAMES)
def test_a_few_steps_reduce_mse(name: str) -> None:
    model = build(name, num_layers=2)
    groups = [learnable_group(seed) for seed in range(4)]
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)

    def epoch_loss(train: bool) -> float:
        total = 0.0
        for snapshots in groups:
            loss = torch.nn.functional.mse_loss(model(snapshots), snapshots[-1].y)
            if train:
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            total += loss.item()
        return total / len(groups)

    with torch.no_grad():
        before = epoch_loss(train=False)
    for _ in range(15):
        epoch_loss(train=True)
    with torch.no_grad():
        after = epoch_loss(train=False)
    assert after < 0.75 * before, f"{name}: MSE {before:.4f} -> {after:.4f}"


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    ("overrides", "message"),
    [({"num_layers": 0}, "num_layers"), ({"num_layers": 4}, "num_layers"), ({"hidden_channels": 0}, "hidden_channels")],
)
def test_invalid_sizes_are_rejected(name: str, overrides: dict[str, int], message: str) -> None:
    cls, kwargs = MODELS[name]
    params = {"hidden_channels": HIDDEN, "num_layers": 2, **kwargs, **overrides}
    with pytest.raises(ValueError, match=message):
        cls(IN_CHANNELS, 1, **params)


def test_gat_heads_must_divide_hidden_size() -> None:
    with pytest.raises(ValueError, match="multiple of heads"):
        GATLSTM(IN_CHANNELS, 1, hidden_channels=10, heads=4)


def test_evolvegcn_h_pads_the_summary_of_a_graph_smaller_than_k() -> None:
    model = build("evolvegcn_h", num_layers=2)  # layer 2 summarises k = HIDDEN = 8 rows
    out = model(changing_group(num_nodes=6))
    assert out.shape == (6,)
    assert torch.isfinite(out).all()


def test_mpnn_lstm_width_grows_with_the_skip_connection() -> None:
    with_skip = build("mpnn_lstm", num_layers=2)
    assert [layer.out_channels for layer in with_skip.layers] == [2 * HIDDEN + IN_CHANNELS, 4 * HIDDEN + IN_CHANNELS]
    without = build("mpnn_lstm", num_layers=2, skip=False)
    assert [layer.out_channels for layer in without.layers] == [2 * HIDDEN, 2 * HIDDEN]
    assert without(changing_group()).shape == (12,)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"K": 0}, "K \\(the Chebyshev filter size\\) must be a positive integer, got 0"),
        ({"K": 2.5}, "got 2.5"),
        ({"normalization": "none"}, "unknown normalization 'none' \\(choose from sym, rw, null\\)"),
    ],
)
def test_gclstm_rejects_a_filter_size_or_normalization_it_cannot_build(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build("gclstm", **overrides)


def test_gclstm_is_initialised_as_tgt_gate_by_gate() -> None:
    """Each gate's block of a stacked weight is Glorot-uniform over its own sizes (tgt's ``W_g``:
    ``in x out``; ``Theta_g^k``: ``out x out``), not over the stacked matrix; biases start at zero."""
    torch.manual_seed(0)
    layer = GCLSTM(64, 1, hidden_channels=16, num_layers=1, K=2).layers[0]
    for weight, fan_in in ((layer.input.weight, 64), *((lin.weight, 16) for lin in layer.conv.lins)):
        bound = (6.0 / (fan_in + 16)) ** 0.5
        for block in weight.chunk(4):
            assert block.abs().max() <= bound and block.abs().max() > 0.9 * bound
    assert not layer.input.bias.any() and not layer.conv.bias.any()
