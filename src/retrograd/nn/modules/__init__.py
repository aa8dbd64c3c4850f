"""The layers of retrograd.nn, one family per file."""
from .module import Module  # noqa: F401
from .container import Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict  # noqa: F401
from .linear import Identity, Linear  # noqa: F401
from .flatten import Flatten, Unflatten  # noqa: F401
from .conv import Conv1d, Conv2d, Conv3d  # noqa: F401
from .pooling import (MaxPool1d, MaxPool2d, MaxPool3d, AvgPool1d, AvgPool2d, AvgPool3d,  # noqa: F401
                      AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool1d,
                      AdaptiveMaxPool2d)
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d  # noqa: F401
from .normalization import LayerNorm, GroupNorm  # noqa: F401
from .dropout import Dropout, Dropout1d, Dropout2d, Dropout3d  # noqa: F401
from .activation import (Threshold, ReLU, RReLU, Hardtanh, ReLU6, Sigmoid, Hardsigmoid, Tanh,  # noqa: F401
                         SiLU, Mish, Hardswish, ELU, CELU, SELU, GLU, GELU, Hardshrink, LeakyReLU,
                         LogSigmoid, Softplus, Softshrink, PReLU, Softsign, Tanhshrink, Softmin, Softmax,
                         LogSoftmax)
from .loss import (L1Loss, NLLLoss, KLDivLoss, MSELoss, BCELoss, BCEWithLogitsLoss, HuberLoss,  # noqa: F401
                   SmoothL1Loss, CrossEntropyLoss, CosineEmbeddingLoss, MarginRankingLoss,
                   TripletMarginLoss, NLLLoss2d, SoftMarginLoss, HingeEmbeddingLoss, MultiLabelSoftMarginLoss,
                   MultiMarginLoss, MultiLabelMarginLoss, PoissonNLLLoss, GaussianNLLLoss,
                   TripletMarginWithDistanceLoss, CTCLoss)
from .sparse import Embedding, EmbeddingBag  # noqa: F401
from .padding import (ConstantPad1d, ConstantPad2d, ConstantPad3d, ZeroPad1d, ZeroPad2d, ZeroPad3d,  # noqa: F401
                      ReflectionPad1d, ReflectionPad2d, ReflectionPad3d, ReplicationPad1d, ReplicationPad2d,
                      ReplicationPad3d, CircularPad1d, CircularPad2d, CircularPad3d)
from .upsampling import Upsample, UpsamplingNearest2d, UpsamplingBilinear2d, PixelShuffle, PixelUnshuffle  # noqa: F401
from .fold import Fold, Unfold  # noqa: F401
from .bilinear import Bilinear  # noqa: F401
from .conv_transpose import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d  # noqa: F401
from .rnn import RNNBase, RNN, LSTM, GRU, RNNCellBase, RNNCell, LSTMCell, GRUCell  # noqa: F401
from .activation_attention import MultiheadAttention  # noqa: F401
from .transformer import (Transformer, TransformerEncoder, TransformerDecoder,  # noqa: F401
                          TransformerEncoderLayer, TransformerDecoderLayer)
from .extra import (InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, RMSNorm, LocalResponseNorm,  # noqa: F401
                    CrossMapLRN2d, ChannelShuffle, PairwiseDistance, CosineSimilarity, Softmax2d, AlphaDropout,
                    FeatureAlphaDropout, LPPool1d, LPPool2d, LPPool3d, AdaptiveMaxPool3d, MaxUnpool1d, MaxUnpool2d,
                    MaxUnpool3d, SyncBatchNorm, Container, FractionalMaxPool2d, FractionalMaxPool3d)
from .lazy import (LazyModuleMixin, LazyLinear, LazyConv1d, LazyConv2d, LazyConv3d,  # noqa: F401
                   LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d, LazyBatchNorm1d, LazyBatchNorm2d,
                   LazyBatchNorm3d, LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d)
from .adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: F401

# PyTorch's file layout: scripts (and pickled whole models) name layers by the torch.nn.modules
# submodule they live in there (torch.nn.modules.conv.ConvTranspose2d); where retrograd defines
# them in another file, that submodule answers to the name too. Modules that retrograd has no file
# for (pixelshuffle, distance, instancenorm, channelshuffle) are re-export files of their own.
_TORCH_LAYOUT = {
    "activation": ("Softmax2d",),
    "batchnorm": ("LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "SyncBatchNorm"),
    "container": ("Container",),
    "conv": ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d",
             "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d"),
    "dropout": ("AlphaDropout", "FeatureAlphaDropout"),
    "linear": ("Bilinear", "LazyLinear"),
    "normalization": ("LocalResponseNorm", "CrossMapLRN2d", "RMSNorm"),
    "pooling": ("AdaptiveMaxPool3d", "FractionalMaxPool2d", "FractionalMaxPool3d", "LPPool1d", "LPPool2d",
                "LPPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"),
}


def _torch_layout():
    import sys
    here = sys.modules[__name__]
    for sub, names in _TORCH_LAYOUT.items():
        mod = sys.modules[f"{__name__}.{sub}"]
        for n in names:
            mod.__dict__.setdefault(n, getattr(here, n))


_torch_layout()
from . import pixelshuffle, distance, instancenorm, channelshuffle  # noqa: E402,F401
