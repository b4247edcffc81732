"""Dynamic GNN models: each a stack of (spatial aggregation, temporal update) layers and a linear head."""

from dygsched.models.dgnn import DGNN, DGNNLayer, State
from dygsched.models.evolvegcn_h import EvolveGCNH, EvolveGCNHLayer
from dygsched.models.evolvegcn_o import EvolveGCNO, EvolveGCNOLayer
from dygsched.models.gat_lstm import GATLSTM, GATLSTMLayer
from dygsched.models.gclstm import GCLSTM, GCLSTMLayer
from dygsched.models.hooks import PLAIN, DelegatingHooks, GivenFirstConv, GivenFirstSpatial, LayerHooks
from dygsched.models.mpnn_lstm import MPNNLSTM, MPNNLSTMLayer
from dygsched.models.partitioned import PartitionOps
from dygsched.models.tgcn import TGCN, TGCNLayer
from dygsched.models.wdgcn import WDGCN, WDGCNLayer

__all__ = [
    "DGNN",
    "DGNNLayer",
    "DelegatingHooks",
    "PartitionOps",
    "GivenFirstConv",
    "GivenFirstSpatial",
    "LayerHooks",
    "PLAIN",
    "EvolveGCNH",
    "EvolveGCNHLayer",
    "EvolveGCNO",
    "EvolveGCNOLayer",
    "GATLSTM",
    "GATLSTMLayer",
    "GCLSTM",
    "GCLSTMLayer",
    "MPNNLSTM",
    "MPNNLSTMLayer",
    "State",
    "TGCN",
    "TGCNLayer",
    "WDGCN",
    "WDGCNLayer",
]
