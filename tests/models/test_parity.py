"""Our layers against torch-geometric-temporal's modules with the same weights, to 1e-5.

Each case runs tgt's module (in float64, weights drawn from a seed) over snapshots whose graphs (and node sets)
change from one to the next and keeps its weights, its recurrent output and state at every step
(and gradients where checked); each test loads those weights into our layer, runs it on the same
snapshots and compares. The numbers come from the references recorded from tgt
(``tests/pgt_references.py``) or, under ``pytest -m pgt``, from tgt itself, checked against the
references too. float64 keeps the comparison free of the CPU's kernels: the 1e-5 bounds how far
the two computations' equations may differ, not their rounding.
WD-GCN and GAT-LSTM have no tgt counterpart; they are checked in test_equations.py.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from typing import cast

import pytest
import torch

from dygsched.data.temporal_graph import Snapshot
from dygsched.models.evolvegcn_h import EvolveGCNHLayer
from dygsched.models.evolvegcn_o import EvolveGCNOLayer
from dygsched.models.gclstm import GCLSTM, GCLSTMLayer
from dygsched.models.mpnn_lstm import MPNNLSTMLayer
from dygsched.models.tgcn import TGCN, TGCNLayer
from tests.models.snapshots import changing_group
from tests.pgt_references import SOURCES, library_case, library_outputs

TOL = {"atol": 1e-5, "rtol": 1e-5}
GATES = ("z", "r", "h")


def tgt_recurrent():
    return importlib.import_module("torch_geometric_temporal.nn.recurrent")


def inputs_of(snapshots: list[Snapshot]) -> list[dict[str, torch.Tensor]]:
    return [{"edge_index": s.edge_index, "edge_weight": s.edge_weight, "x": s.x} for s in snapshots]


def assert_recorded_on(snapshots: list[Snapshot], theirs: dict, case: str) -> None:
    """The case's snapshots are those tgt ran on (else the inputs changed since recording)."""
    for t, (ours, recorded) in enumerate(zip(inputs_of(snapshots), theirs["inputs"], strict=True)):
        for key, value in ours.items():
            assert torch.equal(value, recorded[key]), (
                f"{case}: snapshot {t}'s {key} is not the one recorded: re-record the references"
            )


def weights_of(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: value.detach().clone() for name, value in module.state_dict().items()}


def part(weights: dict[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    """The entries of a submodule's state dict, without its prefix."""
    return {name.removeprefix(f"{prefix}."): value for name, value in weights.items() if name.startswith(f"{prefix}.")}


def draw_parameters(module: torch.nn.Module, seed: int = 0) -> None:
    """Every parameter of tgt's module drawn afresh, in float64, from a seeded generator: tgt's own
    float32 initialisers give values an ulp apart under different CPU kernels, float64 draws are the
    same under all. Weights uniform in +-1/sqrt(fan-in), as torch's defaults; biases N(0, 0.5^2)
    (they often start at zero), so that a mis-copied one shows."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in module.named_parameters():
            if name.endswith("bias"):
                param.copy_(0.5 * torch.randn(param.shape, dtype=torch.float64, generator=generator))
            else:
                bound = param.shape[-1] ** -0.5
                param.copy_(bound * (2 * torch.rand(param.shape, dtype=torch.float64, generator=generator) - 1))


def copy_recurrent(cell: torch.nn.RNNCellBase, rnn_weights: dict[str, torch.Tensor]) -> None:
    """Single-layer ``nn.GRU``/``nn.LSTM`` weights into the matching ``nn.GRUCell``/``nn.LSTMCell``."""
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(cell, name).copy_(rnn_weights[f"{name}_l0"])


def load_tgcn_cell(layer: TGCNLayer, cell_weights: dict[str, torch.Tensor]) -> None:
    """tgt's three gate convolutions, stacked into our single conv."""
    with torch.no_grad():
        layer.conv.lin.weight.copy_(torch.cat([cell_weights[f"conv_{g}.lin.weight"] for g in GATES]))
        layer.conv.bias.copy_(torch.cat([cell_weights[f"conv_{g}.bias"] for g in GATES]))
    for g in GATES:
        getattr(layer, f"linear_{g}").load_state_dict(part(cell_weights, f"linear_{g}"))


# ---- T-GCN -----------------------------------------------------------------------------------------


def tgcn_group(in_channels: int) -> list[Snapshot]:
    return changing_group(length=3, num_features=in_channels, dtype=torch.float64)


def output_weights(out: torch.Tensor) -> torch.Tensor:
    """A loss's weights for the gradient check: every output element counts differently."""
    return torch.linspace(-1, 1, out.numel(), dtype=out.dtype).view_as(out)


def tgt_tgcn(in_channels: int) -> dict:
    """Two tgt ``TGCN`` cells stacked: their weights, hidden states at every step, gradients."""
    recurrent = tgt_recurrent()
    cells = [recurrent.TGCN(in_channels, 8).double(), recurrent.TGCN(8, 8).double()]
    for seed, cell in enumerate(cells):
        draw_parameters(cell, seed)
    weights = [weights_of(cell) for cell in cells]
    snapshots = tgcn_group(in_channels)
    hidden: list[torch.Tensor | None] = [None, None]
    states = []
    for snapshot in snapshots:
        x = snapshot.x
        for i, cell in enumerate(cells):
            hidden[i] = x = cell(x, snapshot.edge_index, snapshot.edge_weight, hidden[i])
        states.append([h.detach().clone() for h in hidden])
    (x * output_weights(x)).sum().backward()
    grads = [{name: param.grad.clone() for name, param in cell.named_parameters()} for cell in cells]
    return {"inputs": inputs_of(snapshots), "weights": weights, "states": states, "grads": grads}


TGCN_CASES = {
    in_channels: library_case(f"tgcn-{in_channels}-features", lambda c=in_channels: tgt_tgcn(c)) for in_channels in (4, 32)
}


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("in_channels", [4, 32], ids=["aggregate-first", "project-first"])  # 32 > 3 x 8 gate channels
def test_tgcn_matches_tgt_cell_by_cell(in_channels: int, source: str) -> None:
    """Our TGCN folds the gates' input halves into the convolution and skips a zero state's
    products (``ZeroState``, the first snapshot): the same outputs, states and gradients as tgt."""
    theirs = library_outputs(TGCN_CASES[in_channels], source)
    snapshots = tgcn_group(in_channels)
    assert_recorded_on(snapshots, theirs, TGCN_CASES[in_channels])
    model = TGCN(in_channels, 1, hidden_channels=8, num_layers=2).double()
    for layer, cell_weights in zip(model.layers, theirs["weights"], strict=True):
        load_tgcn_cell(layer, cell_weights)

    states = model.initial_states(12, torch.device("cpu"), torch.float64)
    for snapshot, hidden in zip(snapshots, theirs["states"], strict=True):
        out, states = model.step(snapshot, states)
        for i, expected in enumerate(hidden):
            torch.testing.assert_close(states[i][0], expected, **TOL)
        torch.testing.assert_close(out, hidden[-1], **TOL)

    (out * output_weights(out)).sum().backward()
    for layer, grads in zip(model.layers, theirs["grads"], strict=True):
        torch.testing.assert_close(layer.conv.lin.weight.grad, torch.cat([grads[f"conv_{g}.lin.weight"] for g in GATES]), **TOL)
        torch.testing.assert_close(layer.conv.bias.grad, torch.cat([grads[f"conv_{g}.bias"] for g in GATES]), **TOL)
        for g in GATES:
            torch.testing.assert_close(getattr(layer, f"linear_{g}").weight.grad, grads[f"linear_{g}.weight"], **TOL)
            torch.testing.assert_close(getattr(layer, f"linear_{g}").bias.grad, grads[f"linear_{g}.bias"], **TOL)


# ---- EvolveGCN -------------------------------------------------------------------------------------

EVOLVE_NODES = {"O": 12, "H": 16}  # H: tgt's pooling ratio 8 / 16 keeps exactly k = 8 rows, as the GRU needs


def evolve_group(variant: str) -> list[Snapshot]:
    return changing_group(num_nodes=EVOLVE_NODES[variant], num_features=8, length=3, dtype=torch.float64)


def tgt_evolvegcn(variant: str) -> dict:
    """tgt's ``EvolveGCNO``/``EvolveGCNH`` (8 x 8 weight): its weights, and per step its evolved
    weight and its output (it carries the weight across calls)."""
    recurrent = tgt_recurrent()
    theirs = (recurrent.EvolveGCNO(8) if variant == "O" else recurrent.EvolveGCNH(EVOLVE_NODES["H"], 8)).double()
    draw_parameters(theirs)
    weights = weights_of(theirs)
    snapshots = evolve_group(variant)
    outputs, evolved = [], []
    with torch.no_grad():
        for snapshot in snapshots:
            outputs.append(theirs(snapshot.x, snapshot.edge_index, snapshot.edge_weight).clone())
            evolved.append(theirs.weight[0].clone())
    return {"inputs": inputs_of(snapshots), "weights": weights, "outputs": outputs, "evolved_weights": evolved}


EVOLVE_CASES = {variant: library_case(f"evolvegcn-{variant.lower()}", lambda v=variant: tgt_evolvegcn(v)) for variant in "OH"}


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("variant", ["O", "H"])
def test_evolvegcn_matches_tgt(variant: str, source: str) -> None:
    theirs = library_outputs(EVOLVE_CASES[variant], source)
    snapshots = evolve_group(variant)
    assert_recorded_on(snapshots, theirs, EVOLVE_CASES[variant])
    ours = (EvolveGCNOLayer(8, 8) if variant == "O" else EvolveGCNHLayer(8, 8)).double()
    with torch.no_grad():
        ours.initial_weight.copy_(theirs["weights"]["initial_weight"][0])
    if variant == "H":
        ours.pooling.load_state_dict(part(theirs["weights"], "pooling_layer"))
    copy_recurrent(ours.recurrent, part(theirs["weights"], "recurrent_layer"))

    state = ours.initial_state(EVOLVE_NODES[variant], torch.device("cpu"), torch.float64)
    for snapshot, expected, weight in zip(snapshots, theirs["outputs"], theirs["evolved_weights"], strict=True):
        out, state = ours.temporal(ours.spatial(snapshot.x, snapshot.edge_index, snapshot.edge_weight, state), state)
        torch.testing.assert_close(state[0], weight, **TOL)
        torch.testing.assert_close(out, torch.relu(expected), **TOL)  # tgt's layer has no activation


# ---- MPNN-LSTM -------------------------------------------------------------------------------------


def mpnn_group(window: int) -> list[Snapshot]:
    return changing_group(length=window, dtype=torch.float64)


def as_window(snapshots: list[Snapshot]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """tgt's MPNNLSTM input: the window's snapshots stacked as one block-diagonal graph."""
    n = snapshots[0].num_nodes
    x = torch.cat([s.x for s in snapshots])
    edge_index = torch.cat([s.edge_index + t * n for t, s in enumerate(snapshots)], dim=1)
    edge_weight = torch.cat([s.edge_weight for s in snapshots])
    return x, edge_index, edge_weight


def tgt_mpnn_lstm(window: int, dropout: float, training: bool) -> dict:
    """tgt's ``MPNNLSTM`` over a window (non-trivial batch-norm statistics and affine parameters): its
    weights, its output, and its batch-norm statistics afterwards."""
    recurrent = tgt_recurrent()
    theirs = recurrent.MPNNLSTM(4, 8, 12, window, dropout).double()
    draw_parameters(theirs)
    torch.manual_seed(0)
    with torch.no_grad():
        for bn in (theirs._batch_norm_1, theirs._batch_norm_2):
            bn.running_mean.normal_()
            bn.running_var.uniform_(0.5, 2.0)
            bn.weight.uniform_(0.5, 1.5)
    weights = weights_of(theirs)
    theirs.train(training)
    snapshots = mpnn_group(window)
    with torch.no_grad():
        out = theirs(*as_window(snapshots)).clone()
    return {"inputs": inputs_of(snapshots), "weights": weights, "output": out, "weights_after": weights_of(theirs)}


MPNN_EVAL = library_case("mpnn_lstm-window-3-eval", lambda: tgt_mpnn_lstm(window=3, dropout=0.5, training=False))
MPNN_TRAIN = library_case("mpnn_lstm-window-1-train", lambda: tgt_mpnn_lstm(window=1, dropout=0.0, training=True))


def mpnn_layer(weights: dict[str, torch.Tensor], dropout: float) -> MPNNLSTMLayer:
    ours = MPNNLSTMLayer(4, 8, dropout=dropout).double()
    for name in ("conv_1", "conv_2"):
        getattr(ours, name).load_state_dict(part(weights, f"_convolution_{name[-1]}"))
    for name in ("batch_norm_1", "batch_norm_2"):
        getattr(ours, name).load_state_dict(part(weights, f"_{name}"))
    copy_recurrent(ours.recurrent_1, part(weights, "_recurrent_1"))
    copy_recurrent(ours.recurrent_2, part(weights, "_recurrent_2"))
    return ours


def run_ours(layer: MPNNLSTMLayer, snapshots: list[Snapshot]) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
    state = layer.initial_state(snapshots[0].num_nodes, torch.device("cpu"), torch.float64)
    for snapshot in snapshots:
        out, state = layer.temporal(layer.spatial(snapshot.x, snapshot.edge_index, snapshot.edge_weight, state), state)
    return out, state


@pytest.mark.parametrize("source", SOURCES)
def test_mpnn_lstm_matches_tgt_over_a_window_in_eval_mode(source: str) -> None:
    """Window of 3 changing graphs: the stacked LSTMs' final H_1, H_2 agree; the skip columns differ by design."""
    theirs = library_outputs(MPNN_EVAL, source)
    snapshots = mpnn_group(3)
    assert_recorded_on(snapshots, theirs, MPNN_EVAL)
    ours = mpnn_layer(theirs["weights"], dropout=0.5)
    ours.eval()
    out, (h1, _, h2, _) = run_ours(ours, snapshots)
    expected = theirs["output"]
    torch.testing.assert_close(h1, expected[:, :8], **TOL)
    torch.testing.assert_close(h2, expected[:, 8:16], **TOL)
    torch.testing.assert_close(out[:, :16], expected[:, :16], **TOL)
    torch.testing.assert_close(out[:, 16:], snapshots[-1].x)  # ours: the current input; tgt: a window layout


@pytest.mark.parametrize("source", SOURCES)
def test_mpnn_lstm_matches_tgt_on_one_snapshot_in_training_mode(source: str) -> None:
    """With w = 1 the batch statistics and the skip columns agree as well: the whole output matches."""
    theirs = library_outputs(MPNN_TRAIN, source)
    snapshots = mpnn_group(1)
    assert_recorded_on(snapshots, theirs, MPNN_TRAIN)
    ours = mpnn_layer(theirs["weights"], dropout=0.0)
    out, _ = run_ours(ours, snapshots)
    torch.testing.assert_close(out, theirs["output"], **TOL)
    after = theirs["weights_after"]
    torch.testing.assert_close(ours.batch_norm_1.running_mean, after["_batch_norm_1.running_mean"], **TOL)
    torch.testing.assert_close(ours.batch_norm_2.running_var, after["_batch_norm_2.running_var"], **TOL)


# ---- GC-LSTM ---------------------------------------------------------------------------------------

GCLSTM_GATES = ("i", "f", "c", "o")
GCLSTM_IN, GCLSTM_HIDDEN = 3, 5  # two widths apart from each other and from the 4 gates: a transposed or mis-stacked block shows
# (normalization, K, bias): the default Laplacian with a filter of order 2; the other two
# normalisations, one without the convolutions' biases; K = 1, which does not propagate.
GCLSTM_SETTINGS = {
    "sym-K3": ("sym", 3, True),
    "rw-K2-no-bias": ("rw", 2, False),
    "none-K2": (None, 2, True),
    "sym-K1": ("sym", 1, True),
}


def gclstm_group() -> list[Snapshot]:
    return changing_group(length=3, num_features=GCLSTM_IN, dtype=torch.float64)


def tgt_gclstm(normalization: str | None, k: int, bias: bool) -> dict:
    """Two tgt ``GCLSTM`` cells stacked (3 -> 5 -> 5): their weights, ``H`` and ``C`` of both at
    every step, and every weight's gradient. tgt's default zero state is float32, so both cells
    start from float64 zeros given explicitly."""
    recurrent = tgt_recurrent()
    cells = [recurrent.GCLSTM(a, GCLSTM_HIDDEN, k, normalization, bias).double() for a in (GCLSTM_IN, GCLSTM_HIDDEN)]
    for seed, cell in enumerate(cells):
        draw_parameters(cell, seed)
    weights = [weights_of(cell) for cell in cells]
    snapshots = gclstm_group()
    zeros = torch.zeros(snapshots[0].num_nodes, GCLSTM_HIDDEN, dtype=torch.float64)
    states = [(zeros, zeros), (zeros, zeros)]
    steps = []
    for snapshot in snapshots:
        x = snapshot.x
        for i, cell in enumerate(cells):
            states[i] = cell(x, snapshot.edge_index, snapshot.edge_weight, *states[i])
            x = states[i][0]
        steps.append([[t.detach().clone() for t in state] for state in states])
    (x * output_weights(x)).sum().backward()
    grads = [{name: param.grad.clone() for name, param in cell.named_parameters()} for cell in cells]
    return {"inputs": inputs_of(snapshots), "weights": weights, "states": steps, "grads": grads}


GCLSTM_CASES = {
    name: library_case(f"gclstm-{name}", lambda setting=setting: tgt_gclstm(*setting))
    for name, setting in GCLSTM_SETTINGS.items()
}


def stacked(tensors: dict[str, torch.Tensor], name: str, k: int | None = None) -> torch.Tensor:
    """tgt's per-gate parameters of one kind in our layout: input weights ``W_g`` (``[in, out]``)
    transposed and stacked, input biases ``b_g`` (``[1, out]``), the convolutions' ``k``-th linear
    weights, or their biases, each stacked in the gate order ``i, f, c, o``."""
    if name == "W":
        return torch.cat([tensors[f"W_{g}"] for g in GCLSTM_GATES], dim=1).T
    if name == "b":
        return torch.cat([tensors[f"b_{g}"].reshape(-1) for g in GCLSTM_GATES])
    if name == "lin":
        return torch.cat([tensors[f"conv_{g}.lins.{k}.weight"] for g in GCLSTM_GATES])
    return torch.cat([tensors[f"conv_{g}.bias"] for g in GCLSTM_GATES])


def load_gclstm_cell(layer: GCLSTMLayer, cell_weights: dict[str, torch.Tensor]) -> None:
    with torch.no_grad():
        layer.input.weight.copy_(stacked(cell_weights, "W"))
        layer.input.bias.copy_(stacked(cell_weights, "b"))
        for k, lin in enumerate(layer.conv.lins):
            lin.weight.copy_(stacked(cell_weights, "lin", k))
        if layer.conv.bias is not None:
            layer.conv.bias.copy_(stacked(cell_weights, "conv_bias"))


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("setting", sorted(GCLSTM_SETTINGS))
def test_gclstm_matches_tgt_cell_by_cell(setting: str, source: str) -> None:
    """Our GC-LSTM stacks the four gates' Chebyshev convolutions into one (one recursion on ``H``
    per step), keeps each snapshot's scaled Laplacian, and skips a zero state's convolution: the
    same ``H`` and ``C`` at every step, and the same gradients, as two tgt cells stacked, on directed
    graphs with isolated nodes (zero degrees) whose node sets change."""
    normalization, k, bias = GCLSTM_SETTINGS[setting]
    theirs = library_outputs(GCLSTM_CASES[setting], source)
    snapshots = gclstm_group()
    assert_recorded_on(snapshots, theirs, GCLSTM_CASES[setting])
    model = GCLSTM(GCLSTM_IN, 1, GCLSTM_HIDDEN, num_layers=2, K=k, normalization=normalization, bias=bias).double()
    layers = [cast(GCLSTMLayer, layer) for layer in model.layers]
    for layer, cell_weights in zip(layers, theirs["weights"], strict=True):
        load_gclstm_cell(layer, cell_weights)

    states = model.initial_states(12, torch.device("cpu"), torch.float64)
    for snapshot, expected in zip(snapshots, theirs["states"], strict=True):
        out, states = model.step(snapshot, states)
        for ours, (h, c) in zip(states, expected, strict=True):
            torch.testing.assert_close(ours[0], h, **TOL)
            torch.testing.assert_close(ours[1], c, **TOL)
        torch.testing.assert_close(out, expected[-1][0], **TOL)

    (out * output_weights(out)).sum().backward()
    for layer, grads in zip(layers, theirs["grads"], strict=True):
        torch.testing.assert_close(layer.input.weight.grad, stacked(grads, "W"), **TOL)
        torch.testing.assert_close(layer.input.bias.grad, stacked(grads, "b"), **TOL)
        for index, lin in enumerate(layer.conv.lins):
            torch.testing.assert_close(lin.weight.grad, stacked(grads, "lin", index), **TOL)
        if bias:
            torch.testing.assert_close(layer.conv.bias.grad, stacked(grads, "conv_bias"), **TOL)
        else:
            assert layer.conv.bias is None and not any(name.endswith(".bias") for name in grads if name.startswith("conv_"))


@contextlib.contextmanager
def default_float64() -> Iterator[None]:
    """Modules built in float64 from the start: their initialisers then draw float64 values, the same
    under every CPU kernel set (float32 draws can differ by an ulp between them)."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(before)


def tgt_gclstm_initialisation() -> dict:
    """The weights of two tgt ``GCLSTM`` cells (``K = 2``) built after ``torch.manual_seed(0)``."""
    recurrent = tgt_recurrent()
    with default_float64():
        torch.manual_seed(0)
        cells = [recurrent.GCLSTM(a, GCLSTM_HIDDEN, 2) for a in (GCLSTM_IN, GCLSTM_HIDDEN)]
    return {"weights": [weights_of(cell) for cell in cells]}


GCLSTM_INITIAL = library_case("gclstm-initialisation", tgt_gclstm_initialisation)


@pytest.mark.parametrize("source", SOURCES)
def test_gclstm_starts_from_the_weights_tgt_draws_from_the_same_seed(source: str) -> None:
    """Our stacked parameters are drawn in tgt's order from the same generator, so after one seed a
    model holds tgt's cells' weights (and a run's first steps are tgt's, bench-vs-pygt's losses too)."""
    theirs = library_outputs(GCLSTM_INITIAL, source)
    with default_float64():
        torch.manual_seed(0)
        model = GCLSTM(GCLSTM_IN, 1, GCLSTM_HIDDEN, num_layers=2, K=2)
    same_draws = {"rtol": 0.0, "atol": 1e-12}  # a kernel set rounds a float64 draw by an ulp; another draw is ~0.1 off
    for layer, weights in zip([cast(GCLSTMLayer, layer) for layer in model.layers], theirs["weights"], strict=True):
        torch.testing.assert_close(layer.input.weight, stacked(weights, "W"), **same_draws)
        torch.testing.assert_close(layer.conv.bias, stacked(weights, "conv_bias"), **same_draws)
        for k, lin in enumerate(layer.conv.lins):
            torch.testing.assert_close(lin.weight, stacked(weights, "lin", k), **same_draws)
        assert not layer.input.bias.any() and not stacked(weights, "b").any()  # tgt's b_g start at zero
