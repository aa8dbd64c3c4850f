"""Finite-difference gradient checks (float64): gradcheck and gradgradcheck."""
import numpy as np

from .._tensor import Tensor
from . import engine, grad_mode

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck when analytical and numerical gradients disagree."""


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _outputs(fn, inputs):
    return [o for o in _as_tuple(fn(*inputs)) if isinstance(o, Tensor) and o._data.dtype.kind in "fcV"]


def _real_view(a):
    """An output's values as float64, a complex one as interleaved (re, im) pairs: complex
    functions are checked as real functions of twice as many real numbers (PyTorch's
    Wirtinger checks by real and imaginary perturbations)."""
    a = np.asarray(a)
    if a.dtype.kind == "c":
        return np.stack([a.real, a.imag], -1).astype(np.float64).reshape(-1)
    return a.astype(np.float64).reshape(-1)


def _width(t):
    return t._data.size * (2 if t._data.dtype.kind == "c" else 1)


def _numerical(fn, inputs, i, eps):
    """Jacobian of every output w.r.t. input i by central differences: one array
    [real numel_in, real numel_out] per output. The input is perturbed in place (any strides);
    a complex element is perturbed along its real and then its imaginary axis."""
    x = inputs[i]
    d = x._data
    steps = (eps, eps * 1j) if d.dtype.kind == "c" else (eps,)
    with grad_mode.no_grad():
        outs0 = _outputs(fn, inputs)
        jac = [np.zeros((_width(x), _width(o))) for o in outs0]
        for k in range(d.size):
            idx = np.unravel_index(k, d.shape) if d.ndim else ()
            orig = d[idx].item()
            for s_, step in enumerate(steps):
                d[idx] = orig + step
                plus = [_real_view(o._data) for o in _outputs(fn, inputs)]
                d[idx] = orig - step
                minus = [_real_view(o._data) for o in _outputs(fn, inputs)]
                d[idx] = orig
                for j in range(len(outs0)):
                    jac[j][k * len(steps) + s_] = (plus[j] - minus[j]) / (2 * eps)
    return jac


def _analytical(fn, inputs, diff_idx):
    """Jacobians by vector-Jacobian products with unit vectors, per (input, output); a complex
    output's imaginary part by the grad_output 1j (PyTorch's convention makes the gradient
    d/d(re) + i d/d(im) of the selected real number)."""
    outs = _outputs(fn, inputs)
    res = {i: [np.zeros((_width(inputs[i]), _width(o))) for o in outs] for i in diff_idx}
    for j, o in enumerate(outs):
        if not o._requires_grad:
            continue
        units = (1, 1j) if o._data.dtype.kind == "c" else (1,)
        for k in range(o._data.size):
            for u_, unit in enumerate(units):
                g = np.zeros(o._data.size, o._data.dtype)
                g[k] = unit
                gt = Tensor._make(g.reshape(o._data.shape))
                grads = engine.grad([o], [inputs[i] for i in diff_idx], [gt], retain_graph=True, allow_unused=True)
                for i, gr in zip(diff_idx, grads):
                    if gr is not None:
                        res[i][j][:, k * len(units) + u_] = _real_view(gr._data)
    return res, outs


def _fmt(a, like):
    dk = like._data.dtype
    t = Tensor._make(a.astype(dk.type(0).real.dtype if dk.kind == "c" else dk) if dk.kind in "fcV" else a)
    return repr(t)


def _mismatch_report(i, j, a, n, x, o, rtol):
    """PyTorch's report (both Jacobians), then the worst element in words."""
    k = np.unravel_index(np.argmax(np.abs(a - n) - rtol * np.abs(n)), a.shape)
    kin = k[0] // (2 if x._data.dtype.kind == "c" else 1)
    kout = k[1] // (2 if o._data.dtype.kind == "c" else 1)
    in_el = tuple(int(v) for v in np.unravel_index(kin, x._data.shape)) if x._data.ndim else ()
    out_el = tuple(int(v) for v in np.unravel_index(kout, o._data.shape)) if o._data.ndim else ()
    return (f"Jacobian mismatch for output {j} with respect to input {i},\n"
            f"numerical:{_fmt(n, o)}\n"
            f"analytical:{_fmt(a, o)}\n\n"
            f"The worst mismatch is d(output {j}{list(out_el)}) / d(input {i}{list(in_el)}): "
            f"analytical {float(a[k])!r} vs numerical {float(n[k])!r} (difference {float(a[k] - n[k])!r}).\n")


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False, check_forward_ad=False,
              check_backward_ad=True, fast_mode=False, masked=None):
    """Compare autograd's gradients of ``func`` at ``inputs`` with central finite differences.

    On a mismatch it raises GradcheckError (or returns False) naming the output and input,
    both Jacobians, and the worst element with its analytical and numerical values.
    """
    inputs = _as_tuple(inputs)
    diff_idx = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t._requires_grad]
    if not diff_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of "
                         "them have requires_grad=True.")
    for i in diff_idx:
        if inputs[i]._data.dtype not in (np.float64, np.complex128):
            import warnings
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point or "
                          "complex. This check will likely fail if all the inputs are not of double precision "
                          "floating point or complex. ", UserWarning, stacklevel=2)
    analytical, outs = _analytical(func, inputs, diff_idx)
    for i in diff_idx:
        numerical = _numerical(func, inputs, i, eps)
        for j in range(len(outs)):
            a, n = analytical[i][j], numerical[j]
            if (np.abs(a - n) > atol + rtol * np.abs(n)).any():
                if raise_exception:
                    raise GradcheckError(_mismatch_report(i, j, a, n, inputs[i], outs[j], rtol))
                return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, **kw):
    """gradcheck of the gradient of ``func`` (checks double backward)."""
    inputs = _as_tuple(inputs)
    diff_idx = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t._requires_grad]
    outs = _outputs(func, inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = [Tensor._make(np.asarray(rng.standard_normal(o._data.shape) + 1j * rng.standard_normal(o._data.shape))
                                     if o._data.dtype.kind == "c" else rng.standard_normal(o._data.shape)
                                     ).requires_grad_(True) for o in outs]
    grad_outputs = list(_as_tuple(grad_outputs))
    n_in = len(inputs)

    def first_grad(*args):
        ins, gos = args[:n_in], args[n_in:]
        with grad_mode.enable_grad():  # also under the no_grad of the finite differences
            os_ = _outputs(func, ins)
            gs = engine.grad(os_, [ins[i] for i in diff_idx], list(gos), create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_grad, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)


class _CallableModule(__import__("types").ModuleType):
    """``retrograd.autograd.gradcheck`` is both this module and the function (importing the
    submodule rebinds the package attribute to the module, so the module must be callable)."""

    def __call__(self, *args, **kwargs):
        return gradcheck(*args, **kwargs)


__import__("sys").modules[__name__].__class__ = _CallableModule
