"""The memory-based continuous-time models (TGN, JODIE, APAN): shapes, TGL's equations written out by
hand, row independence (the engine computes rows anywhere), gradients and the Hydra configs."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf
from torch import nn

from dygsched.models.apan import APAN
from dygsched.models.jodie import JODIE
from dygsched.models.memory_base import MemoryModel, TimeEncoding
from dygsched.models.tgn import TGN

CONF = Path(__file__).resolve().parents[2] / "conf" / "model"
MODELS = {"tgn": TGN, "jodie": JODIE, "apan": APAN}
SMALL = {"memory_dim": 8, "time_dim": 6, "dropout": 0.0}
# The equations by hand and the row checks claim the same numbers as the model: in float64, where another
# order of summing (another batch shape, another CPU kernel set) moves a value by ~1e-16, not the 1e-7 of
# float32, which sat within a factor of 2 of a 1e-6 tolerance.
EXACT = {"atol": 1e-12, "rtol": 0.0}


def build(name: str, edge_dim: int = 1, **kwargs) -> MemoryModel:
    torch.manual_seed(0)
    extra = {"tgn": {"neighbours": 4}, "apan": {"mailbox_size": 3, "neighbours": 2}, "jodie": {}}[name]
    model = MODELS[name](num_nodes=50, edge_dim=edge_dim, **{**SMALL, **extra, **kwargs})
    with torch.no_grad():  # phases away from TGL's b = 0, so that cos(w dt + b) sees the sign of dt
        for module in model.modules():
            if isinstance(module, TimeEncoding):
                module.lin.bias.uniform_(-1.0, 1.0)
    return model


def in_dtype_of(model: MemoryModel, rows: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``rows`` with their floating tensors in the model's dtype (the same values, drawn in float32)."""
    dtype = next(model.parameters()).dtype
    return {key: value.to(dtype) if value.is_floating_point() else value for key, value in rows.items()}


def state_rows(model: MemoryModel, n: int, seed: int = 1) -> dict[str, torch.Tensor]:
    """Random memory, mailbox and times for ``n`` rows (query times after the memory times)."""
    g = torch.Generator().manual_seed(seed)
    memory_time = torch.rand(n, generator=g) * 50
    query_time = memory_time + torch.rand(n, generator=g) * 20
    return in_dtype_of(
        model,
        {
            "memory": torch.randn(n, model.memory_dim, generator=g),
            "memory_time": memory_time,
            "mail": torch.randn(n, model.mailbox_size, model.mail_dim, generator=g),
            "mail_time": memory_time[:, None] - torch.rand(n, model.mailbox_size, generator=g) * 10,
            "query_time": query_time,
        },
    )


def root_rows(model: MemoryModel, n: int, seed: int = 2) -> dict[str, torch.Tensor]:
    """Random inputs of ``embed`` for ``n`` roots (some neighbours padded, one root with none)."""
    g = torch.Generator().manual_seed(seed)
    k = model.embedding_neighbours
    memory_time = torch.rand(n, generator=g) * 50
    query_time = memory_time + torch.rand(n, generator=g) * 20
    mask = torch.rand(n, k, generator=g) < 0.7
    if k:
        mask[0] = False
        mask[1] = True
    return in_dtype_of(
        model,
        {
            "memory": torch.randn(n, model.memory_dim, generator=g),
            "memory_time": memory_time,
            "query_time": query_time,
            "neighbour_memory": torch.randn(n, k, model.memory_dim, generator=g) * mask[..., None],
            "neighbour_time": (query_time[:, None] - torch.rand(n, k, generator=g) * 30) * mask,
            "neighbour_edge": torch.randn(n, k, model.edge_dim, generator=g) * mask[..., None],
            "neighbour_mask": mask,
        },
    )


def phi(encoder: TimeEncoding, dt: torch.Tensor) -> torch.Tensor:
    return torch.cos(dt[..., None] * encoder.lin.weight[:, 0] + encoder.lin.bias)


def layer_norm(x: torch.Tensor, norm: nn.LayerNorm) -> torch.Tensor:
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + norm.eps) * norm.weight + norm.bias


def leaky(x: torch.Tensor) -> torch.Tensor:
    return x if x > 0 else 0.2 * x


# ---- the interface ------------------------------------------------------------------------------
@pytest.mark.parametrize("edge_dim", [0, 1])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_shapes_and_attributes(name: str, edge_dim: int) -> None:
    model = build(name, edge_dim)
    assert isinstance(model, MemoryModel)
    assert model.mail_dim == 2 * model.memory_dim + edge_dim and model.embedding_dim == model.memory_dim
    assert (model.mailbox_size, model.embedding_neighbours, model.mail_neighbours) == {
        "tgn": (1, 4, 0),
        "jodie": (1, 0, 0),
        "apan": (3, 0, 2),
    }[name]
    n = 7
    s = model.update_memory(**state_rows(model, n))
    assert s.shape == (n, model.memory_dim) and s.dtype == torch.float32
    z = model.embed(**root_rows(model, n))
    assert z.shape == (n, model.embedding_dim)
    assert model.score(z, z.flip(0)).shape == (n,)
    edge = torch.randn(n, edge_dim)
    mail = model.mail(s, s.flip(0), edge)
    assert mail.shape == (n, model.mail_dim)
    assert torch.equal(mail, torch.cat([s, s.flip(0), edge], dim=1))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_rows_are_independent(name: str) -> None:
    """A permuted subset of rows gives the same rows as the whole batch (update, embed and score)."""
    model = build(name).double()
    n = 16
    subset = torch.randperm(n, generator=torch.Generator().manual_seed(3))[:9]
    state, roots = state_rows(model, n), root_rows(model, n)
    s, z = model.update_memory(**state), model.embed(**roots)
    logits = model.score(z, z.flip(0))
    s_sub = model.update_memory(**{key: value[subset] for key, value in state.items()})
    z_sub = model.embed(**{key: value[subset] for key, value in roots.items()})
    torch.testing.assert_close(s_sub, s[subset], **EXACT)
    torch.testing.assert_close(z_sub, z[subset], **EXACT)
    torch.testing.assert_close(model.score(z_sub, z.flip(0)[subset]), logits[subset], **EXACT)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_dropout_zero_is_deterministic_and_eval_switches_dropout_off(name: str) -> None:
    model = build(name)
    state, roots = state_rows(model, 6), root_rows(model, 6)
    assert torch.equal(model.update_memory(**state), model.update_memory(**state))
    noisy = build(name, dropout=0.5).eval()
    assert torch.equal(noisy.update_memory(**state), noisy.update_memory(**state))
    assert torch.equal(noisy.embed(**roots), noisy.embed(**roots))


# ---- the time encoding ----------------------------------------------------------------------------
def test_time_encoding_starts_at_tgl_frequencies_and_is_trainable() -> None:
    d = 100
    encoder = TimeEncoding(d)
    expected = torch.tensor([10 ** (-9 * k / (d - 1)) for k in range(d)], dtype=torch.float32)
    torch.testing.assert_close(encoder.lin.weight[:, 0], expected, atol=0, rtol=1e-6)
    assert encoder.lin.weight[0, 0] == 1 and torch.all(encoder.lin.bias == 0)
    assert all(p.requires_grad for p in encoder.parameters())
    dt = torch.tensor([[0.0, 1.5], [3.0, 1e4]])
    out = encoder(dt)
    assert out.shape == (2, 2, d)
    torch.testing.assert_close(out, torch.cos(dt[..., None] * expected), atol=1e-6, rtol=0)
    assert torch.equal(TimeEncoding(1).lin.weight, torch.ones(1, 1))
    for model in (MODELS[name](num_nodes=5, edge_dim=1, time_dim=6) for name in MODELS):
        encoders = [module for module in model.modules() if isinstance(module, TimeEncoding)]
        assert len(encoders) == (2 if isinstance(model, TGN) else 1)  # TGN: the updater's and the attention's
        for encoder in encoders:
            torch.testing.assert_close(encoder.lin.weight[:, 0], 10 ** -torch.linspace(0, 9, 6))
            assert torch.all(encoder.lin.bias == 0)


# ---- TGL's equations written out ------------------------------------------------------------------
def test_jodie_updater_and_embedding_by_hand() -> None:
    model = build("jodie").double()
    state = state_rows(model, 3)
    s, tau, t, m = state["memory"], state["memory_time"], state["query_time"], state["mail"][:, 0]
    rnn = model.updater
    x = torch.cat([m, phi(model.time_encoder, t - tau)], dim=1)
    expected = torch.tanh(x @ rnn.weight_ih.T + rnn.bias_ih + s @ rnn.weight_hh.T + rnn.bias_hh)
    s_new = model.update_memory(**state)
    torch.testing.assert_close(s_new, expected, **EXACT)

    lin = model.time_projection.lin
    dt = (t - tau) / (t + 1)
    z_expected = layer_norm(s_new, model.norm) * (1 + dt[:, None] * lin.weight[:, 0] + lin.bias)
    roots = root_rows(model, 3)
    roots.update(memory=s_new, memory_time=tau, query_time=t)
    torch.testing.assert_close(model.embed(**roots), z_expected, **EXACT)


def test_jodie_time_projection_starts_like_jodies_normal_linear() -> None:
    torch.manual_seed(0)
    lin = JODIE(num_nodes=5, edge_dim=0, memory_dim=4000).time_projection.lin
    assert abs(float(lin.weight.detach().std()) - 1.0) < 0.05 and abs(float(lin.bias.detach().std()) - 1.0) < 0.05


def test_tgn_gru_reads_the_latest_mail_and_the_time_since_the_last_update() -> None:
    model = build("tgn").double()
    state = state_rows(model, 4)
    s, tau, t, m = state["memory"], state["memory_time"], state["query_time"], state["mail"][:, 0]
    gru = model.updater
    x = torch.cat([m, phi(model.time_encoder, t - tau)], dim=1)
    gi, gh = x @ gru.weight_ih.T + gru.bias_ih, s @ gru.weight_hh.T + gru.bias_hh
    (i_r, i_z, i_n), (h_r, h_z, h_n) = gi.chunk(3, 1), gh.chunk(3, 1)
    r, z = torch.sigmoid(i_r + h_r), torch.sigmoid(i_z + h_z)
    candidate = torch.tanh(i_n + r * h_n)
    torch.testing.assert_close(model.update_memory(**state), (1 - z) * candidate + z * s, **EXACT)
    # mail_time plays no part (TGL encodes t - tau)
    moved = {**state, "mail_time": state["mail_time"] + 7}
    assert torch.equal(model.update_memory(**moved), model.update_memory(**state))


def test_tgn_attention_by_hand_with_a_masked_neighbour() -> None:
    model = build("tgn", heads=2).double()
    att = model.attention
    roots = root_rows(model, 5)
    roots["neighbour_mask"][2] = torch.tensor([True, False, True, True])
    z = model.embed(**roots)
    d, heads = model.memory_dim, 2
    width = d // heads
    for r in range(5):
        s, t = roots["memory"][r], roots["query_time"][r]
        q = att.w_q(torch.cat([s, phi(att.time_encoder, torch.zeros((), dtype=s.dtype))]))
        keys, values, valid = [], [], []
        for j in range(model.embedding_neighbours):
            if not roots["neighbour_mask"][r, j]:
                continue
            dt = t - roots["neighbour_time"][r, j]
            feature = torch.cat([roots["neighbour_memory"][r, j], roots["neighbour_edge"][r, j], phi(att.time_encoder, dt)])
            keys.append(att.w_k(feature))
            values.append(att.w_v(feature))
            valid.append(j)
        attended = torch.zeros(d, dtype=s.dtype)
        for h in range(heads):
            part = slice(h * width, (h + 1) * width)
            scores = torch.stack([leaky(q[part] @ key[part]) for key in keys]) if keys else torch.zeros(0, dtype=s.dtype)
            weights = torch.exp(scores)
            for w, value in zip(weights, values):
                attended[part] += w / weights.sum() * value[part]
        expected = layer_norm(torch.relu(att.w_out(torch.cat([attended, s]))), att.norm)
        torch.testing.assert_close(z[r], expected, **EXACT)
    # a padded neighbour's inputs do not matter
    changed = {key: value.clone() for key, value in roots.items()}
    changed["neighbour_memory"][2, 1] += 100
    changed["neighbour_time"][2, 1] -= 5
    changed["neighbour_edge"][2, 1] += 3
    torch.testing.assert_close(model.embed(**changed), z, atol=0, rtol=0)


def test_apan_updater_on_one_row_by_hand() -> None:
    model = build("apan", heads=2).double()
    state = state_rows(model, 3)
    r = 1
    s, t = state["memory"][r], state["query_time"][r]
    heads, width = 2, model.memory_dim // 2
    q = model.w_q(s)
    slots = [torch.cat([state["mail"][r, j], phi(model.time_encoder, t - state["mail_time"][r, j])]) for j in range(3)]
    attended = torch.zeros(model.memory_dim, dtype=s.dtype)
    for h in range(heads):
        part = slice(h * width, (h + 1) * width)
        weights = torch.exp(torch.stack([leaky(q[part] @ model.w_k(slot)[part]) for slot in slots]))
        for w, slot in zip(weights, slots):
            attended[part] += w / weights.sum() * model.w_v(slot)[part]
    expected = torch.relu(model.mlp(layer_norm(attended + s, model.updater_norm)))
    s_new = model.update_memory(**state)
    torch.testing.assert_close(s_new[r], expected, **EXACT)
    roots = root_rows(model, 3)
    roots["memory"] = s_new
    torch.testing.assert_close(model.embed(**roots), layer_norm(s_new, model.norm), **EXACT)


# ---- edge cases and gradients ---------------------------------------------------------------------
def test_tgn_roots_without_neighbours_get_finite_embeddings_and_gradients() -> None:
    model = build("tgn").double()
    roots = root_rows(model, 4)
    roots["neighbour_mask"][:] = False
    roots["memory"].requires_grad_(True)
    z = model.embed(**roots)
    att = model.attention
    expected = layer_norm(
        torch.relu(att.w_out(torch.cat([torch.zeros(4, model.memory_dim, dtype=z.dtype), roots["memory"]], 1))), att.norm
    )
    torch.testing.assert_close(z, expected, **EXACT)
    z.sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    assert torch.isfinite(roots["memory"].grad).all()
    # k = 0 neighbours: the same embeddings
    empty = {**roots, "neighbour_memory": roots["neighbour_memory"][:, :0], "neighbour_time": roots["neighbour_time"][:, :0]}
    empty.update(neighbour_edge=roots["neighbour_edge"][:, :0], neighbour_mask=roots["neighbour_mask"][:, :0])
    torch.testing.assert_close(model.embed(**empty), z, **EXACT)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_gradients_reach_every_parameter(name: str) -> None:
    """Update the memory of roots and neighbours from their mails, embed, score, BCE: every parameter
    gets a non-zero gradient (the engine recomputes s' in the forward pass for exactly this)."""
    model = build(name)
    n = 6
    state = state_rows(model, 3 * n)
    s_new = model.update_memory(**state)
    roots = root_rows(model, 3 * n)
    roots.update(memory=s_new, memory_time=state["memory_time"], query_time=state["query_time"])
    k = model.embedding_neighbours
    if k:
        neighbour_state = state_rows(model, 3 * n * k, seed=5)
        neighbour_state["query_time"] = state["query_time"].repeat_interleave(k)
        s_neighbour = model.update_memory(**neighbour_state).reshape(3 * n, k, -1)
        roots["neighbour_memory"] = s_neighbour * roots["neighbour_mask"][..., None]
    z = model.embed(**roots)
    positive, negative = model.score(z[:n], z[n : 2 * n]), model.score(z[:n], z[2 * n :])
    loss = nn.functional.binary_cross_entropy_with_logits(positive, torch.ones(n)) + (
        nn.functional.binary_cross_entropy_with_logits(negative, torch.zeros(n))
    )
    loss.backward()
    for param_name, param in model.named_parameters():
        assert param.grad is not None and param.grad.abs().sum() > 0, param_name


# ---- validation -------------------------------------------------------------------------------------
def test_bad_settings_and_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match="heads"):
        TGN(num_nodes=5, edge_dim=0, memory_dim=9, heads=2)
    with pytest.raises(ValueError, match="heads"):
        APAN(num_nodes=5, edge_dim=0, memory_dim=9, heads=2)
    with pytest.raises(ValueError, match="num_nodes"):
        JODIE(num_nodes=0, edge_dim=0)
    with pytest.raises(ValueError, match="dropout"):
        JODIE(num_nodes=5, edge_dim=0, dropout=1.0)
    model = build("apan")
    state = state_rows(model, 2)
    with pytest.raises(ValueError, match="mail must be"):
        model.update_memory(**{**state, "mail": state["mail"][:, :1]})
    with pytest.raises(ValueError, match="edge_dim"):
        model.mail(state["memory"], state["memory"], torch.zeros(2, 2))


# ---- the Hydra configs -----------------------------------------------------------------------------
@pytest.mark.parametrize("edge_dim", [0, 1])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_config_instantiates_its_model(name: str, edge_dim: int) -> None:
    cfg = OmegaConf.load(CONF / f"{name}.yaml")
    assert cfg.name == name and cfg.default_lr == 1e-4  # TGL's learning rate, what optim.lr takes by default
    cfg = OmegaConf.masked_copy(cfg, [key for key in cfg if key not in ("name", "default_lr")])
    model = instantiate(cfg, num_nodes=10, edge_dim=edge_dim)
    assert type(model) is MODELS[name] and isinstance(model, MemoryModel)
    assert (model.num_nodes, model.edge_dim, model.memory_dim, model.time_dim) == (10, edge_dim, 100, 100)
    assert model.mail_dim == 200 + edge_dim and model.dropout_p == 0.1
    assert (model.mailbox_size, model.embedding_neighbours, model.mail_neighbours) == {
        "tgn": (1, 10, 0),
        "jodie": (1, 0, 0),
        "apan": (10, 0, 10),
    }[name]
    state = state_rows(model, 3)
    assert model.update_memory(**state).shape == (3, 100)


@pytest.mark.parametrize("name", list(MODELS))
def test_per_vertex_state_read_at_several_times_is_the_expanded_update(name):
    """``update_memory(..., rows=)``: one state entry per vertex, rows reading it at their own times,
    the same values and gradients as the expanded call (what the engine's dedup relies on)."""
    model = build(name, edge_dim=3, dropout=0.0).double()
    state = {key: value.double() for key, value in state_rows(model, 6).items()}
    rows = torch.tensor([0, 0, 3, 5, 3, 1, 0, 2])
    query_time = state["memory_time"][rows] + torch.rand(rows.numel(), dtype=torch.float64) * 20
    grouped = model.update_memory(**{**state, "query_time": query_time}, rows=rows)
    expanded = model.update_memory(
        **{key: value[rows] for key, value in state.items() if key != "query_time"}, query_time=query_time
    )
    torch.testing.assert_close(grouped, expanded, atol=1e-12, rtol=0)
    weights = torch.randn_like(grouped)
    params = [p for p in model.parameters() if p.requires_grad]
    first = torch.autograd.grad((grouped * weights).sum(), params, allow_unused=True)
    second = torch.autograd.grad((expanded * weights).sum(), params, allow_unused=True)
    for a, b in zip(first, second):
        assert (a is None) == (b is None) and (a is None or torch.allclose(a, b, atol=1e-12))


def test_tgn_reads_each_distinct_neighbour_event_once_with_the_same_result():
    model = build("tgn", edge_dim=5, dropout=0.0).double()
    roots = {key: value.double() if value.is_floating_point() else value for key, value in root_rows(model, 7).items()}
    events = torch.randint(0, 4, roots["neighbour_mask"].shape)  # 4 distinct events among 7 x 4 neighbours
    features = torch.randn(4, 5, dtype=torch.float64)
    dense = model.embed(**{**roots, "neighbour_edge": features[events] * roots["neighbour_mask"][..., None]})
    indexed = model.embed(**{**roots, "neighbour_edge": features}, neighbour_edge_index=events)
    torch.testing.assert_close(indexed, dense, atol=1e-12, rtol=0)
