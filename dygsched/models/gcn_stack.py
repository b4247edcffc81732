"""``GCNStack``: the DGNN of TGCN, WD-GCN and EvolveGCN-O/-H, which differ only in their layer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dygsched.models.dgnn import DGNN, DGNNLayer, stack_layers


class GCNStack(DGNN):
    """A DGNN of ``num_layers`` GCN-based layers of one kind (``layer_type``) and a linear head.

    TGCN, WD-GCN and EvolveGCN-O/-H differ only in their layer; ``improved`` and
    ``add_self_loops`` are GCN's normalisation options, passed to every layer with any option of
    the layer's own (``layer_options``, e.g. TGCN's ``project_first``).
    """

    layer_type: Callable[..., DGNNLayer]  # (input width, hidden, improved, add_self_loops, **layer_options)

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        hidden_channels: int = 64,
        num_layers: int = 2,
        improved: bool = False,
        add_self_loops: bool = True,
        **layer_options: Any,
    ) -> None:
        make_layer = lambda width: type(self).layer_type(width, hidden_channels, improved, add_self_loops, **layer_options)  # noqa: E731
        super().__init__(stack_layers(make_layer, in_channels, out_channels, hidden_channels, num_layers), out_channels)
