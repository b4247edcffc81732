"""The link decoder: scoring pairs of rows of one table, projected before or after the gather."""

import pytest
import torch

from dygsched.models.link_decoder import LinkDecoder


@pytest.mark.parametrize("pairs", [3, 400], ids=["gather-first", "project-first"])
def test_pairs_equal_the_mlp_on_the_gathered_rows_with_their_gradients(pairs):
    torch.manual_seed(0)
    decoder = LinkDecoder(8, 16).double()
    z = torch.randn(50, 8, dtype=torch.float64, requires_grad=True)
    src, dst = torch.randint(0, 50, (pairs,)), torch.randint(0, 50, (pairs,))
    many = torch.randint(0, 50, (7, pairs))  # one-vs-many: each source against 7 destinations
    expected = decoder(z[src].repeat(7, 1), z[many.reshape(-1)]).view(7, pairs)
    for sources in (src.expand_as(many), src):  # a source per pair, or one per column
        scored = decoder.pairs(z, sources, many)
        assert scored.shape == (7, pairs) and torch.allclose(scored, expected, rtol=1e-12, atol=1e-12)
    (grad,) = torch.autograd.grad(decoder.pairs(z, src, dst).sum(), z)
    (expected_grad,) = torch.autograd.grad(decoder(z[src], z[dst]).sum(), z)
    assert torch.allclose(grad, expected_grad, rtol=1e-12, atol=1e-12)


def test_sources_that_fit_neither_the_pairs_nor_the_columns_are_refused():
    decoder = LinkDecoder(4)
    with pytest.raises(ValueError, match="fit neither"):
        decoder.pairs(torch.zeros(5, 4), torch.zeros(3, dtype=torch.long), torch.zeros(2, 4, dtype=torch.long))
