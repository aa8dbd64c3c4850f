"""Lazy modules: parameters whose shapes come from the first input (LazyLinear, LazyConv*,
LazyConvTranspose*, LazyBatchNorm*, LazyInstanceNorm*). The first forward materializes them,
initializes them as the eager layer would, and turns the module into that layer's class."""
from ... import _creation
from ... import _dtype as D
from ...autograd import grad_mode
from ..parameter import UninitializedParameter, UninitializedBuffer, is_lazy
from .module import _add_handle
from .linear import Linear
from .conv import Conv1d, Conv2d, Conv3d
from .conv_transpose import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .extra import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d

__all__ = ["LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class LazyModuleMixin:
    """Mixin of the lazy modules: a forward pre-hook calls ``initialize_parameters(*args)`` once."""
    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._load_hook = _add_handle(self._load_state_dict_pre_hooks, self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                        error_msgs):
        """Materialize uninitialized parameters and buffers to the shapes of a loaded state_dict."""
        for name, param in list(self._parameters.items()) + list(self._buffers.items()):
            key = prefix + name
            if key in state_dict and param is not None and is_lazy(param):
                value = state_dict[key]
                if not is_lazy(value):
                    with grad_mode.no_grad():
                        param.materialize(tuple(value.shape))

    def initialize_parameters(self, *args, **kwargs):
        raise NotImplementedError(f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def has_uninitialized_params(self):
        """Whether any parameter or buffer of this module is still uninitialized."""
        for t in list(self._parameters.values()) + list(self._buffers.values()):
            if t is not None and is_lazy(t):
                return True
        return False

    @staticmethod
    def _infer_parameters(module, args, kwargs=None):
        kwargs = kwargs if kwargs else {}
        module.initialize_parameters(*args, **kwargs)
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        delattr(module, "_initialize_hook")
        delattr(module, "_load_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with `DataParallel`. Run a dummy "
                           "forward pass to correctly initialize the modules")


class LazyLinear(LazyModuleMixin, Linear):
    """Linear whose ``in_features`` is inferred from the first input's last dim."""
    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            with grad_mode.no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


class _LazyConvXdMixin(LazyModuleMixin):
    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def _get_in_channels(self, input):
        nsp = self._nd
        no_batch, batch = nsp + 1, nsp + 2
        if input.dim() not in (no_batch, batch):
            raise RuntimeError(f"Expected {no_batch}D (unbatched) or {batch}D (batched) input to "
                               f"{self.__class__.__name__}, but got input of size: {input.shape}")
        return input.shape[1] if input.dim() == batch else input.shape[0]

    def initialize_parameters(self, input, *args, **kwargs):
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            if self.transposed:
                shape = (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
            else:
                shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
            with grad_mode.no_grad():
                self.weight.materialize(shape)
                if self.bias is not None:
                    self.bias.materialize((self.out_channels,))
            self.reset_parameters()


def _lazy_conv(name, base, transposed, doc):
    if transposed:
        def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                     dilation=1, padding_mode="zeros", device=None, dtype=None):
            base.__init__(self, 0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation,
                          padding_mode)
            _lazy_init(self, out_channels, bias, device, dtype)
    else:
        def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                     padding_mode="zeros", device=None, dtype=None):
            base.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode)
            _lazy_init(self, out_channels, bias, device, dtype)

    def _lazy_init(self, out_channels, bias, device, dtype):
        self._load_hook = _add_handle(self._load_state_dict_pre_hooks, self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    return type(name, (_LazyConvXdMixin, base), {"__init__": __init__, "cls_to_become": base, "__doc__": doc,
                                                   "__module__": __name__})


LazyConv1d = _lazy_conv("LazyConv1d", Conv1d, False, "Conv1d whose in_channels comes from the first input.")
LazyConv2d = _lazy_conv("LazyConv2d", Conv2d, False, "Conv2d whose in_channels comes from the first input.")
LazyConv3d = _lazy_conv("LazyConv3d", Conv3d, False, "Conv3d whose in_channels comes from the first input.")
LazyConvTranspose1d = _lazy_conv("LazyConvTranspose1d", ConvTranspose1d, True,
                                 "ConvTranspose1d whose in_channels comes from the first input.")
LazyConvTranspose2d = _lazy_conv("LazyConvTranspose2d", ConvTranspose2d, True,
                                 "ConvTranspose2d whose in_channels comes from the first input.")
LazyConvTranspose3d = _lazy_conv("LazyConvTranspose3d", ConvTranspose3d, True,
                                 "ConvTranspose3d whose in_channels comes from the first input.")


class _LazyNormBase(LazyModuleMixin):
    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            if self.affine:
                with grad_mode.no_grad():
                    self.weight.materialize((self.num_features,))
                    self.bias.materialize((self.num_features,))
            if self.track_running_stats:
                self.running_mean.materialize((self.num_features,))
                self.running_var.materialize((self.num_features,))
            self.reset_parameters()


def _lazy_norm(name, base, affine_default, track_default, doc):
    def __init__(self, eps=1e-5, momentum=0.1, affine=affine_default, track_running_stats=track_default,
                 device=None, dtype=None):
        base.__init__(self, 0, eps, momentum, False, False)
        self._load_hook = _add_handle(self._load_state_dict_pre_hooks, self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        if self.track_running_stats:
            self.register_buffer("running_mean", UninitializedBuffer(device=device, dtype=dtype))
            self.register_buffer("running_var", UninitializedBuffer(device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", _creation.tensor(0, dtype=D.int64, device=device))

    return type(name, (_LazyNormBase, base), {"__init__": __init__, "cls_to_become": base, "__doc__": doc,
                                                "__module__": __name__})


LazyBatchNorm1d = _lazy_norm("LazyBatchNorm1d", BatchNorm1d, True, True,
                             "BatchNorm1d whose num_features comes from the first input.")
LazyBatchNorm2d = _lazy_norm("LazyBatchNorm2d", BatchNorm2d, True, True,
                             "BatchNorm2d whose num_features comes from the first input.")
LazyBatchNorm3d = _lazy_norm("LazyBatchNorm3d", BatchNorm3d, True, True,
                             "BatchNorm3d whose num_features comes from the first input.")
# (PyTorch's lazy instance norms default to affine=True and track_running_stats=True, unlike the eager ones)
LazyInstanceNorm1d = _lazy_norm("LazyInstanceNorm1d", InstanceNorm1d, True, True,
                                "InstanceNorm1d whose num_features comes from the first input.")
LazyInstanceNorm2d = _lazy_norm("LazyInstanceNorm2d", InstanceNorm2d, True, True,
                                "InstanceNorm2d whose num_features comes from the first input.")
LazyInstanceNorm3d = _lazy_norm("LazyInstanceNorm3d", InstanceNorm3d, True, True,
                                "InstanceNorm3d whose num_features comes from the first input.")

