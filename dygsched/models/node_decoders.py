"""What node property prediction puts on top of a memory model's node embeddings (``task=node``).

* ``StateClassifier``: DyGLib's ``MLPClassifier``, ``in -> 80 -> 10 -> 1`` with ReLU and dropout after
  each hidden layer: the logit that an event's source changes state at it (dynamic node
  classification on JODIE's Wikipedia and REDDIT).
* ``AffinityDecoder``: TGB's ``NodePredictor``, ``Linear(in, in)``, ReLU, ``Linear(in, classes)``:
  a node's affinity logits over the classes (TGB's node property prediction; a softmax of them is
  trained against the label's shares).

Both are row-independent, as the memory models are: any rank can decode any rows.
"""

from __future__ import annotations

import torch
from torch import nn

CLASSIFIER_WIDTHS = (80, 10)  # DyGLib's MLPClassifier


class StateClassifier(nn.Module):
    """DyGLib's ``MLPClassifier``: the state logit ``[n]`` of ``[n, in]`` source embeddings."""

    def __init__(self, in_dim: int, dropout: float = 0.1) -> None:
        super().__init__()
        first, second = CLASSIFIER_WIDTHS
        self.fc1 = nn.Linear(in_dim, first)
        self.fc2 = nn.Linear(first, second)
        self.fc3 = nn.Linear(second, 1)
        self.dropout = nn.Dropout(dropout)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        h = self.dropout(torch.relu(self.fc1(z)))
        h = self.dropout(torch.relu(self.fc2(h)))
        return self.fc3(h).squeeze(-1)


class AffinityDecoder(nn.Module):
    """TGB's ``NodePredictor``: affinity logits ``[n, classes]`` of ``[n, in]`` node embeddings."""

    def __init__(self, in_dim: int, num_classes: int) -> None:
        super().__init__()
        self.lin_node = nn.Linear(in_dim, in_dim)
        self.out = nn.Linear(in_dim, num_classes)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.out(torch.relu(self.lin_node(z)))
