"""Ops of the op table not yet device-clean on the emulated CUDA device: strict expected
failures of tests/device/test_ops.py (each says why; remove an entry once its op passes)."""

OP_XFAIL = {
    "bfloat16": "CuPy has no bfloat16 dtype: Tensor.bfloat16() on a cuda tensor raises "
                "(TypeError: Unsupported dtype bfloat16)",
}

# ops whose result is the device itself (tested on their own in tests/device/test_ops.py)
DEVICE_SEMANTICS = {"type": "test_type_names_the_cuda_type", "cpu": "test_cpu_copies_to_the_host"}


# Ops that still compute with NumPy/SciPy on the host. The device runs them only through its
# array module, so these raise on the emulated device; each group names what its port needs.
_SPECIAL = ("scipy.special's ufuncs run on the host: a port to cupyx.scipy.special (through "
            "the array module's scipy) is pending")
_HOST = "written with NumPy calls on host arrays: not yet ported to the device's array module"

OP_XFAIL.update({n: _SPECIAL for n in (
    'digamma', 'i0', 'igamma', 'igammac', 'lgamma', 'logit', 'logit(eps)', 'mvlgamma', 'polygamma',
    'polygamma(0)', 'polygamma(1)', 'polygamma(2)', 'polygamma(3)', 'sinc', 'special.airy_ai',
    'special.bessel_j0', 'special.bessel_j1', 'special.bessel_y0', 'special.bessel_y1',
    'special.chebyshev_polynomial_t', 'special.chebyshev_polynomial_u', 'special.chebyshev_polynomial_v',
    'special.chebyshev_polynomial_w', 'special.digamma', 'special.entr', 'special.erfcx', 'special.gammainc',
    'special.gammaincc', 'special.gammaln', 'special.hermite_polynomial_h', 'special.hermite_polynomial_he',
    'special.i0', 'special.i0e', 'special.i1', 'special.i1e', 'special.laguerre_polynomial_l',
    'special.legendre_polynomial_p', 'special.log_ndtr', 'special.logit', 'special.modified_bessel_i0',
    'special.modified_bessel_i1', 'special.modified_bessel_k0', 'special.modified_bessel_k1',
    'special.multigammaln', 'special.ndtr', 'special.ndtri', 'special.polygamma', 'special.psi',
    'special.scaled_modified_bessel_k0', 'special.scaled_modified_bessel_k1',
    'special.shifted_chebyshev_polynomial_t', 'special.shifted_chebyshev_polynomial_u',
    'special.shifted_chebyshev_polynomial_v', 'special.shifted_chebyshev_polynomial_w', 'special.sinc',
    'special.spherical_bessel_j0', 'special.xlog1py', 'special.zeta',
)})

OP_XFAIL.update({n: _HOST for n in (
    'F.channel_shuffle', 'F.conv_tbc', 'F.ctc_loss', 'F.fractional_max_pool2d',
    'F.fractional_max_pool2d_with_indices', 'F.fractional_max_pool3d', 'F.fractional_max_pool3d_with_indices',
    'F.max_unpool1d', 'F.max_unpool2d', 'F.max_unpool3d', 'F.multi_margin_loss', 'F.multilabel_margin_loss',
    'F.native_channel_shuffle', 'F.soft_margin_loss', 'as_strided_scatter', 'bartlett_window', 'bincount',
    'blackman_window', 'block_diag', 'bucketize', 'cdist', 'cumulative_trapezoid', 'frexp', 'gcd',
    'hamming_window', 'hamming_window(alpha)', 'hann_window', 'heaviside', 'histc', 'histogram',
    'histogramdd', 'index_reduce(amax)', 'index_reduce(amax, include_self=False)', 'index_reduce(amin)',
    'index_reduce(amin, include_self=False)', 'index_reduce(mean)', 'index_reduce(mean, include_self=False)',
    'index_reduce(prod)', 'index_reduce(prod, include_self=False)', 'isin', 'kaiser_window',
    'kaiser_window(beta)', 'lcm', 'ldexp', 'nan_to_num', 'nanquantile', 'nextafter', 'pdist', 'quantile',
    'searchsorted', 'torch.detach_copy', 'trapezoid', 'trapz', 'tril_indices', 'triu_indices', 'unique',
    'unique_consecutive', 'unravel_index',
)})
