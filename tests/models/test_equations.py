"""Models without a torch-geometric-temporal counterpart, checked against their equations written out by hand.

torch-geometric-temporal has no WD-GCN: its GCN+LSTM cells are different models. ``GConvLSTM``
(Seo et al.) convolves both X and H with ChebConv inside every gate and adds peepholes on C;
``GCLSTM`` (Chen et al.) maps X linearly and convolves H with ChebConv. WD-GCN (Manessi et al.)
convolves X only, once per snapshot, and feeds a plain per-node LSTM. Nor has it a GAT-LSTM.
So both are rebuilt here from dense matrices and the LSTM gate equations and compared to 1e-5.
The same goes for EvolveGCN with a non-square weight, which tgt does not support.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dygsched.models import GATLSTM, WDGCN, EvolveGCNH, EvolveGCNO
from dygsched.models.ops import gcn_aggregate
from tests.models.snapshots import changing_group

TOL = {"atol": 1e-5, "rtol": 1e-5}


def dense_gcn_matrix(edge_index: torch.Tensor, edge_weight: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """D^-1/2 (A + I) D^-1/2 with A[target, source] = weight (duplicate edges add up)."""
    adj = torch.zeros(num_nodes, num_nodes)
    adj.index_put_((edge_index[1], edge_index[0]), edge_weight, accumulate=True)
    adj = adj + torch.eye(num_nodes)
    deg_inv_sqrt = adj.sum(dim=1).pow(-0.5)
    return deg_inv_sqrt[:, None] * adj * deg_inv_sqrt[None, :]


def lstm_by_hand(x, h, c, cell):
    """PyTorch's LSTM cell (gate order i, f, g, o) written out."""
    gates = x @ cell.weight_ih.T + cell.bias_ih + h @ cell.weight_hh.T + cell.bias_hh
    i, f, g, o = gates.chunk(4, dim=-1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


def gat_by_hand(x, edge_index, conv):
    """Multi-head GAT with self-loops (one per node, existing ones replaced), heads concatenated."""
    n = x.size(0)
    keep = edge_index[0] != edge_index[1]
    loops = torch.arange(n)
    src = torch.cat([edge_index[0][keep], loops])
    dst = torch.cat([edge_index[1][keep], loops])
    heads, per_head = conv.heads, conv.out_channels
    z = (x @ conv.lin.weight.T).view(n, heads, per_head)
    score = (z * conv.att_src).sum(-1)[src] + (z * conv.att_dst).sum(-1)[dst]  # [E, heads]
    score = F.leaky_relu(score, conv.negative_slope).exp()
    denominator = torch.zeros(n, heads).index_add_(0, dst, score)
    alpha = score / denominator[dst]
    out = torch.zeros(n, heads, per_head).index_add_(0, dst, alpha.unsqueeze(-1) * z[src])
    return out.reshape(n, heads * per_head) + conv.bias


def test_gcn_aggregate_is_the_normalised_adjacency() -> None:
    snapshot = changing_group()[0]
    expected = dense_gcn_matrix(snapshot.edge_index, snapshot.edge_weight, snapshot.num_nodes) @ snapshot.x
    torch.testing.assert_close(gcn_aggregate(snapshot.x, snapshot.edge_index, snapshot.edge_weight), expected, **TOL)


def test_wdgcn_matches_gcn_then_lstm() -> None:
    torch.manual_seed(0)
    model = WDGCN(4, 1, hidden_channels=8, num_layers=2).eval()
    for layer in model.layers:  # the bias starts at zero: make it count
        torch.nn.init.normal_(layer.conv.bias)
    snapshots = changing_group(length=3)
    states = model.initial_states(12, torch.device("cpu"))
    expected_states = [(torch.zeros(12, 8), torch.zeros(12, 8)) for _ in model.layers]
    for snapshot in snapshots:
        out, states = model.step(snapshot, states)
        a_hat = dense_gcn_matrix(snapshot.edge_index, snapshot.edge_weight, snapshot.num_nodes)
        x = snapshot.x
        for i, layer in enumerate(model.layers):
            s = torch.relu(a_hat @ x @ layer.conv.lin.weight.T + layer.conv.bias)
            h, c = lstm_by_hand(s, *expected_states[i], layer.lstm)
            expected_states[i] = (h, c)
            x = h
        torch.testing.assert_close(out, x, **TOL)
        for got, want in zip(states, expected_states, strict=True):
            torch.testing.assert_close(got[0], want[0], **TOL)
            torch.testing.assert_close(got[1], want[1], **TOL)


def test_gat_lstm_matches_gat_then_lstm() -> None:
    torch.manual_seed(0)
    model = GATLSTM(4, 1, hidden_channels=8, num_layers=2, heads=2).eval()
    for layer in model.layers:  # the bias starts at zero: make it count
        torch.nn.init.normal_(layer.conv.bias)
    snapshots = changing_group(length=3)
    states = model.initial_states(12, torch.device("cpu"))
    expected_states = [(torch.zeros(12, 8), torch.zeros(12, 8)) for _ in model.layers]
    for snapshot in snapshots:
        out, states = model.step(snapshot, states)
        x = snapshot.x
        for i, layer in enumerate(model.layers):
            s = F.elu(gat_by_hand(x, snapshot.edge_index, layer.conv))
            h, c = lstm_by_hand(s, *expected_states[i], layer.lstm)
            expected_states[i] = (h, c)
            x = h
        torch.testing.assert_close(out, x, **TOL)
        for got, want in zip(states, expected_states, strict=True):
            torch.testing.assert_close(got[1], want[1], **TOL)


def gru_by_hand(x, h, cell):
    """PyTorch's GRU cell (gate order r, z, n) written out."""
    gi = x @ cell.weight_ih.T + cell.bias_ih
    gh = h @ cell.weight_hh.T + cell.bias_hh
    r = torch.sigmoid(gi[:, : h.size(1)] + gh[:, : h.size(1)])
    z = torch.sigmoid(gi[:, h.size(1) : 2 * h.size(1)] + gh[:, h.size(1) : 2 * h.size(1)])
    n = torch.tanh(gi[:, 2 * h.size(1) :] + r * gh[:, 2 * h.size(1) :])
    return (1 - z) * n + z * h


def test_evolvegcn_with_a_non_square_weight_matches_its_equations() -> None:
    """W is [4, 8] in layer 1; -O: W_t = GRU(W_{t-1}, W_{t-1}); -H: W_t = GRU(TopK(X_t), W_{t-1})."""
    for cls in (EvolveGCNO, EvolveGCNH):
        torch.manual_seed(0)
        model = cls(4, 1, hidden_channels=8, num_layers=1)
        layer = model.layers[0]
        weight = layer.initial_weight
        states = model.initial_states(12, torch.device("cpu"))
        for snapshot in changing_group(length=3):
            out, states = model.step(snapshot, states)
            a_hat = dense_gcn_matrix(snapshot.edge_index, snapshot.edge_weight, snapshot.num_nodes)
            if cls is EvolveGCNO:
                weight = gru_by_hand(weight, weight, layer.recurrent)
            else:
                x, p = snapshot.x, layer.pooling.select.weight.flatten()
                score = torch.tanh(x @ p / p.norm())
                top = score.argsort(descending=True, stable=True)[:4]
                weight = gru_by_hand(x[top] * score[top, None], weight, layer.recurrent)
            torch.testing.assert_close(states[0][0], weight, **TOL)
            torch.testing.assert_close(out, torch.relu(a_hat @ snapshot.x @ weight), **TOL)
