"""EdgeBank (Poursafaei et al., NeurIPS 2022): the memorising baseline of every DyGLib and TGB table.

EdgeBank has no parameters. It predicts a link ``(u, v)`` with probability 1 when the pair is in its
memory, the set of (source, destination) pairs of the history it was given, and 0 otherwise.
``memory`` picks which pairs of the history it keeps (DyGLib's ``edge_bank_memory_mode``, named
without the ``_memory`` suffix):

* ``unlimited``: every pair the history holds;
* ``time_window``: the pairs of the history's events inside a time window ``[start, end]`` with
  ``end`` the history's latest time and, by ``time_window_mode``:

  - ``fixed_proportion``: ``start`` the ``1 - p`` quantile of the history's event times (numpy's
    linear interpolation), ``p = time_window_proportion``, by default the share of the stream the
    phase being evaluated holds (DyGLib passes its test ratio);
  - ``repeat_interval``: ``start = end - w`` with ``w`` the sum over distinct pairs of the mean gap
    between a pair's consecutive events (0 for a pair seen once), divided by the number of distinct
    pairs;

* ``repeat_threshold``: the pairs seen at least as often as the mean count of the distinct pairs.

Both window bounds are inclusive, as DyGLib's. The history is directed: ``(u, v)`` does not put
``(v, u)`` in memory. Which history a batch gets is the engine's protocol (``sched=single`` and the
other node-memory strategies): every event before the batch's global batch in stream order (for
validation the training events and the validation events before the batch; for test those and the
test events before it), so the memory grows batch by batch as DyGLib's evaluation grows it.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from dygsched.errors import ConfigError

MEMORY_MODES = ("unlimited", "time_window", "repeat_threshold")
TIME_WINDOW_MODES = ("fixed_proportion", "repeat_interval")


class EdgeBank(nn.Module):
    """A parameter-free link predictor: 1 for a remembered (source, destination) pair, else 0."""

    graph_convolutions = False  # nothing for the graph-convolution FLOP counter
    # what the node-memory engine's state table is built with: EdgeBank keeps no node state
    memory_dim: ClassVar[int] = 0
    mail_dim: ClassVar[int] = 0
    mailbox_size: ClassVar[int] = 1
    embedding_neighbours: ClassVar[int] = 0
    mail_neighbours: ClassVar[int] = 0

    def __init__(
        self,
        num_nodes: int,
        edge_dim: int = 0,
        memory: str = "unlimited",
        time_window_mode: str = "fixed_proportion",
        time_window_proportion: float | None = None,
    ) -> None:
        super().__init__()
        if memory not in MEMORY_MODES:
            raise ConfigError(f"model.memory must be one of {', '.join(MEMORY_MODES)}, got {memory!r}")
        if time_window_mode not in TIME_WINDOW_MODES:
            raise ConfigError(f"model.time_window_mode must be one of {', '.join(TIME_WINDOW_MODES)}, got {time_window_mode!r}")
        if time_window_proportion is not None and not 0 < float(time_window_proportion) <= 1:
            raise ConfigError(f"model.time_window_proportion must be in (0, 1], got {time_window_proportion!r}")
        self.num_nodes, self.memory, self.time_window_mode = int(num_nodes), memory, time_window_mode
        self.time_window_proportion = None if time_window_proportion is None else float(time_window_proportion)

    def extra_repr(self) -> str:
        return f"num_nodes={self.num_nodes}, memory={self.memory}, time_window_mode={self.time_window_mode}"

    def _keys(self, src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
        return src.long() * self.num_nodes + dst.long()

    def remembered(
        self, history_src: torch.Tensor, history_dst: torch.Tensor, history_t: torch.Tensor, proportion: float
    ) -> torch.Tensor:
        """The sorted distinct pair keys (``src * num_nodes + dst``) in memory after ``history``
        (events in stream order, times non-decreasing); ``proportion``: the fixed-proportion window's
        share when ``time_window_proportion`` is unset."""
        keys = self._keys(history_src, history_dst)
        if keys.numel() == 0:
            return keys
        if self.memory == "time_window":
            times = history_t.double().cpu().numpy()
            end = times.max()
            if self.time_window_mode == "fixed_proportion":
                share = self.time_window_proportion if self.time_window_proportion is not None else proportion
                start = float(np.quantile(times, 1 - share))
            else:
                start = end - self._mean_repeat_interval(keys, history_t.double())
            inside = torch.from_numpy((times >= start) & (times <= end))
            keys = keys[inside]
        distinct, counts = torch.unique(keys, return_counts=True)
        if self.memory == "repeat_threshold":
            distinct = distinct[counts >= counts.double().mean()]
        return distinct

    @staticmethod
    def _mean_repeat_interval(keys: torch.Tensor, times: torch.Tensor) -> float:
        """DyGLib's ``repeat_interval`` window: per distinct pair the mean gap between its consecutive
        events, ``(last - first) / (count - 1)`` (0 when seen once), summed and divided by the pairs."""
        distinct, index, counts = torch.unique(keys, return_inverse=True, return_counts=True)
        first = torch.full((distinct.numel(),), float("inf"), dtype=times.dtype).scatter_reduce(0, index, times, "amin")
        last = torch.full((distinct.numel(),), float("-inf"), dtype=times.dtype).scatter_reduce(0, index, times, "amax")
        repeated = counts > 1
        gaps = (last[repeated] - first[repeated]) / (counts[repeated] - 1).to(times.dtype)
        return float(gaps.sum() / distinct.numel())

    def forward(
        self,
        history_src: torch.Tensor,
        history_dst: torch.Tensor,
        history_t: torch.Tensor,
        src: torch.Tensor,
        dst: torch.Tensor,
        proportion: float = 0.15,
    ) -> torch.Tensor:
        """The probability (1.0 or 0.0) of each pair ``(src[i], dst[i])``, ``dst`` of any shape ``[n, ...]``
        and ``src`` of ``dst``'s shape (a source per pair) or ``[n]`` (one per row)."""
        memory = self.remembered(history_src, history_dst, history_t, proportion)
        expanded = src if src.shape == dst.shape else src.reshape(-1, *([1] * (dst.dim() - 1))).expand_as(dst)
        return torch.isin(self._keys(expanded, dst), memory).to(torch.float32)

    @staticmethod
    def loss_sum(positive: torch.Tensor, negative: torch.Tensor) -> torch.Tensor:
        """Binary cross-entropy of the probabilities (DyGLib's ``BCELoss``: each log clamped at -100), summed."""
        return F.binary_cross_entropy(positive, torch.ones_like(positive), reduction="sum") + F.binary_cross_entropy(
            negative, torch.zeros_like(negative), reduction="sum"
        )
