"""The layers of retrograd.nn, one family per file."""
from .module import Module  # noqa: F401
from .container import Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict  # noqa: F401
from .linear import Identity, Linear  # noqa: F401
from .flatten import Flatten, Unflatten  # noqa: F401
from .sparse import Embedding, EmbeddingBag  # noqa: F401
from .padding import (ConstantPad1d, ConstantPad2d, ConstantPad3d, ZeroPad1d, ZeroPad2d, ZeroPad3d,  # noqa: F401
                      ReflectionPad1d, ReflectionPad2d, ReflectionPad3d, ReplicationPad1d, ReplicationPad2d,
                      ReplicationPad3d, CircularPad1d, CircularPad2d, CircularPad3d)
from .upsampling import Upsample, UpsamplingNearest2d, UpsamplingBilinear2d  # noqa: F401
from .fold import Fold, Unfold  # noqa: F401
from .bilinear import Bilinear  # noqa: F401
from .conv_transpose import ConvTranspose1d, ConvTranspose2d  # noqa: F401
from .rnn import RNNBase, RNN, LSTM, GRU, RNNCellBase, RNNCell, LSTMCell, GRUCell  # noqa: F401
from .activation_attention import MultiheadAttention  # noqa: F401
