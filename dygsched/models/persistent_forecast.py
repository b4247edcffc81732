"""The persistent forecast and the moving average: TGB's floors for node property prediction.

The node counterpart of EdgeBank (``edgebank.py``): no parameters, a node's prediction is what its
own earlier labels say (TGB's ``PersistantForecaster`` and ``MovingAverage``,
``modules/heuristics.py``), evaluated by the node-memory strategies' own node-task evaluation on
exactly the rows the learned models are scored on, so every node figure has its floor beside it.

* ``mode="last"`` (the persistent forecast): the node's last label seen, zeros before any;
* ``mode="moving_average"``: TGB's rule, ``m <- m (w - 1) / w + y / w`` with ``w = window`` (7),
  the first label taken as it is: an exponential average that weighs the latest label ``1 / w``.

For node affinities (TGB's ``tgbn-*``) a label is a node's vector at a label time, known once that
time is scored. For state labels (one 0/1 per event, DyGLib's dynamic node classification) the
node is the event's source and its label is known once the event's global batch is scored: the
prediction is the source's last (or averaged) state label, a score AUC ranks.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import nn

from dygsched.errors import ConfigError

MODES = ("last", "moving_average")


class PersistentForecast(nn.Module):
    """A parameter-free node forecaster: each node's last label, or TGB's moving average of them.

    ``update(nodes, labels)`` records the labels ``[n, C]`` of ``nodes`` (in order: a node repeated
    takes its rows one after another); ``predict(nodes)`` gives ``[n, C]`` (zeros for a node with
    no label yet). ``state_dict`` is empty: the state is rebuilt by streaming the labels in order."""

    graph_convolutions = False  # nothing for the graph-convolution FLOP counter
    # what the node-memory engine's state table is built with: the forecaster keeps no node state there
    memory_dim: ClassVar[int] = 0
    mail_dim: ClassVar[int] = 0
    mailbox_size: ClassVar[int] = 1
    embedding_neighbours: ClassVar[int] = 0
    mail_neighbours: ClassVar[int] = 0

    def __init__(self, num_nodes: int, edge_dim: int = 0, mode: str = "last", window: int = 7) -> None:
        super().__init__()
        if mode not in MODES:
            raise ConfigError(f"model.mode must be one of {', '.join(MODES)}, got {mode!r}")
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ConfigError(f"model.window must be a whole number of labels, at least 1, got {window!r}")
        self.num_nodes, self.mode, self.window = int(num_nodes), mode, int(window)
        self._state: torch.Tensor | None = None  # [N, C]
        self._seen: torch.Tensor | None = None  # [N] bool

    def extra_repr(self) -> str:
        return f"num_nodes={self.num_nodes}, mode={self.mode}, window={self.window}"

    def reset(self, width: int) -> None:
        """Forget every label; labels are ``width`` wide."""
        self._state = torch.zeros(self.num_nodes, width, dtype=torch.float64)
        self._seen = torch.zeros(self.num_nodes, dtype=torch.bool)

    def predict(self, nodes: torch.Tensor) -> torch.Tensor:
        if self._state is None:
            raise RuntimeError("reset() the forecaster before predicting")
        return self._state[nodes.long()].float()

    def update(self, nodes: torch.Tensor, labels: torch.Tensor) -> None:
        if self._state is None or self._seen is None:
            raise RuntimeError("reset() the forecaster before updating it")
        nodes, labels = nodes.long(), labels.double()
        if self.mode == "last":  # the last row of each node wins
            order = torch.arange(nodes.numel())
            last = torch.full((self.num_nodes,), -1, dtype=torch.int64).scatter_reduce_(0, nodes, order, reduce="amax")
            kept = last[last >= 0]
            self._state[nodes[kept]] = labels[kept]
            self._seen[nodes] = True
            return
        w = float(self.window)
        for node, label in zip(nodes.tolist(), labels):  # in order: a node's rows fold one after another
            self._state[node] = self._state[node] * (w - 1) / w + label / w if self._seen[node] else label
            self._seen[node] = True
