"""Higher-level derivatives of a function: jacobian, hessian, vjp, jvp, hvp, vhp.

The same contract as ``torch.autograd.functional`` (after its implementation): inputs
are a Tensor or a tuple of Tensors, results mirror that structure, results are detached
unless ``create_graph=True``, and ``strict=True`` refuses outputs independent of an
input. Forward-mode products (jvp, hvp) use the double-vjp trick: the vjp is linear in
its vector, so differentiating it with respect to that vector gives the jvp.
"""
from .._tensor import Tensor
from .. import _creation
from . import grad_mode, engine

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _as_tuple(inp, arg_name=None, fn_name=None):
    if arg_name is None and fn_name is None:
        return inp if isinstance(inp, tuple) else tuple(inp) if isinstance(inp, list) else (inp,)
    is_tuple = True
    if not isinstance(inp, tuple):
        inp = (inp,)
        is_tuple = False
    for i, el in enumerate(inp):
        if not isinstance(el, Tensor):
            if is_tuple:
                raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors "
                                f"but the value at index {i} has type {type(el)}.")
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                            f"the given {arg_name} has type {type(el)}.")
    return is_tuple, inp


def _tuple_postprocess(res, to_unpack):
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph, need_graph):
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.view_as(inp))
        else:
            res.append(inp.detach().requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(inputs, create_graph):
    if isinstance(inputs[0], Tensor):
        return inputs if create_graph else tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.size() != el_other.size():
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {el_other.size()} but got {el_v.size()}.")


def _check_requires_grad(inputs, input_type, strict):
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}. This is "
                               "not allowed in strict mode.")
        if not inp.requires_grad:
            if input_type == "hessian":
                raise RuntimeError(
                    f"The hessian of the user-provided function with respect to input {i} is independent of the "
                    "input. This is not allowed in strict mode. You should ensure that your function is thrice "
                    "differentiable and that the hessian depends on the inputs.")
            if input_type == "jacobian":
                raise RuntimeError(
                    "While computing the hessian, found that the jacobian of the user-provided function with "
                    f"respect to input {i} is independent of the input. This is not allowed in strict mode. You "
                    "should ensure that your function is twice differentiable and that the jacobian depends on "
                    "the inputs (this would be violated by a linear function for example).")
            if input_type == "grad_inputs":
                raise RuntimeError(f"The gradient with respect to input {i} is independent of the inputs of the "
                                   "user-provided function. This is not allowed in strict mode.")
            raise RuntimeError(f"Output {i} of the user-provided function does not require gradients. The outputs "
                               "must be computed in a differentiable manner from the input when running in "
                               "strict mode.")


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    new_outputs, new_grad_outputs = (), ()
    for out, g in zip(outputs, grad_outputs):
        if out is not None and out.requires_grad:
            new_outputs += (out,)
            new_grad_outputs += (g,)
    if not new_outputs:
        return (None,) * len(inputs)
    return engine.grad(new_outputs, inputs, new_grad_outputs, allow_unused=True, create_graph=create_graph,
                       retain_graph=retain_graph)


_STRICT_MSGS = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in "
            "strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs when "
                  "using the double backward trick to compute forward mode gradients. This is not allowed in "
                  "strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not allowed "
                   "in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the "
                         "grad_jacobian. This is not allowed in strict mode as it prevents from using the double "
                         "backward trick to replace forward mode AD.",
}


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    res = ()
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_STRICT_MSGS[stage].format(i=i))
            g = _creation.zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of input {i}. This is "
                               "not allowed in strict mode when create_graph=True.")
        res += (g,)
    return res


def _prep_v(v, ref, is_ref_tuple, create_graph, fn_name, what):
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, ref, is_ref_tuple)
    elif len(ref) != 1 or ref[0].nelement() != 1:
        raise RuntimeError(f"The vector v can only be None if {what} a single Tensor with a single element.")
    return v


def _prep_inputs(inputs, create_graph, fn_name):
    """(whether a tuple was given, the inputs as fresh graph leaves or views)."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    return is_inputs_tuple, _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)


def _call(func, inputs, strict, fn_name):
    """(whether func returned a tuple, its outputs as a tuple), each output checked in strict mode."""
    is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", fn_name)
    _check_requires_grad(outputs, "outputs", strict=strict)
    return is_outputs_tuple, outputs


def _product(outputs, is_outputs_tuple, of, wrt, v, refs, is_res_tuple, create_graph, strict, stage):
    """The last step every product shares: the vjp of ``of`` with respect to ``wrt`` along ``v``
    (missing parts as zeros like ``refs``), then (outputs, product) in the shapes the user gave."""
    with grad_mode.set_grad_enabled(True if create_graph else grad_mode.is_grad_enabled()):
        grad_res = _autograd_grad(of, wrt, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, refs, strict, create_graph, stage)
    outputs = _grad_postprocess(outputs, create_graph)
    res = _grad_postprocess(res, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(res, is_res_tuple)


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product at ``inputs``."""
    with grad_mode.enable_grad():
        is_inputs_tuple, inputs = _prep_inputs(inputs, create_graph, "vjp")
        is_outputs_tuple, outputs = _call(func, inputs, strict, "vjp")
        v = _prep_v(v, outputs, is_outputs_tuple, create_graph, "vjp", "the user-provided function returns")
    return _product(outputs, is_outputs_tuple, outputs, inputs, v, inputs, is_inputs_tuple, create_graph, strict,
                    "back")


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product, by the double-vjp trick."""
    with grad_mode.enable_grad():
        is_inputs_tuple, inputs = _prep_inputs(inputs, create_graph, "jvp")
        v = _prep_v(v, inputs, is_inputs_tuple, create_graph, "jvp", "the input to the user-provided function is")
        is_outputs_tuple, outputs = _call(func, inputs, strict, "jvp")
        grad_outputs = tuple(_creation.zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    return _product(outputs, is_outputs_tuple, grad_inputs, grad_outputs, v, outputs, is_outputs_tuple, create_graph,
                    strict, "back_trick")


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs`` (one vjp per output element; ``vectorize``
    is accepted and computes the same thing)."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                             'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                             'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError("torch.autograd.functional.jacobian: `create_graph=True` and `strategy="
                                      "\"forward-mode\"` are not supported together (yet). Please either set "
                                      "`create_graph=False` or `strategy=\"reverse-mode\"`.")
        if not vectorize:
            raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
                                      "only implemented for `vectorize=True`.")
        return _jacobian_forward(func, inputs, strict)
    if vectorize and strict:
        raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not "
                           "supported together. Please either set `strict=False` or `vectorize=False`.")
    with grad_mode.enable_grad():
        is_inputs_tuple, inputs = _prep_inputs(inputs, create_graph, "jacobian")
        is_outputs_tuple, outputs = _call(func, inputs, strict, "jacobian")
        jac = ()
        for i, out in enumerate(outputs):
            jac_i = tuple([] for _ in inputs)
            flat = out.reshape(-1)
            for j in range(out.nelement()):
                vj = _autograd_grad((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
                for el_idx, (jac_el, vj_el, inp_el) in enumerate(zip(jac_i, vj, inputs)):
                    if vj_el is not None:
                        if strict and create_graph and not vj_el.requires_grad:
                            raise RuntimeError(f"The jacobian of the user-provided function is independent of "
                                               f"input {i}. This is not allowed in strict mode when "
                                               "create_graph=True.")
                        jac_el.append(vj_el)
                    else:
                        if strict:
                            raise RuntimeError(f"Output {i} of the user-provided function is independent of "
                                               f"input {el_idx}. This is not allowed in strict mode.")
                        jac_el.append(_creation.zeros_like(inp_el))
            jac += (tuple(_rows(jac_el, out.size() + inputs[k].size(), inputs[k])
                          for k, jac_el in enumerate(jac_i)),)
        jac = _grad_postprocess(jac, create_graph)
        return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def _jacobian_forward(func, inputs, strict):
    """One forward-mode pass (a dual input) per input element: the Jacobian's columns."""
    from . import forward_ad as fwAD
    from ..ops import stack
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    inputs = tuple(i.detach() for i in inputs)
    cols = [[] for _ in inputs]
    outs = None
    for k, inp in enumerate(inputs):
        for e in range(inp.numel()):
            with fwAD.dual_level():
                duals = []
                for j, x in enumerate(inputs):
                    t = _creation.zeros(x.numel(), dtype=x.dtype)
                    if j == k:
                        t[e] = 1
                    duals.append(fwAD.make_dual(x, t.reshape(x.shape)))
                res = func(*duals)
                is_outputs_tuple, res_t = _as_tuple(res, "outputs of the user-provided function", "jacobian")
                tans = []
                for o in res_t:
                    p, tan = fwAD.unpack_dual(o)
                    tans.append(_creation.zeros_like(p) if tan is None else tan)
                outs = tuple(fwAD.unpack_dual(o).primal for o in res_t)
            cols[k].append(tans)
    if outs is None:
        is_outputs_tuple, res_t = _as_tuple(func(*inputs), "outputs of the user-provided function", "jacobian")
        outs = res_t
    jac = tuple(tuple(stack([c[i] for c in cols[k]], -1).reshape(outs[i].shape + inputs[k].shape)
                      if cols[k] else _creation.zeros(outs[i].shape + inputs[k].shape, dtype=outs[i].dtype)
                      for k in range(len(inputs))) for i in range(len(outs)))
    jac = tuple(tuple(x.detach() for x in row) for row in jac)
    return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def _rows(rows, shape, inp):
    from ..ops import stack     # ops import autograd: bound at call time
    if not rows:
        return _creation.zeros(shape, dtype=inp.dtype)
    return stack(rows).view(shape)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar function ``func`` at ``inputs``."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        if is_out_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.nelement() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single element")
        return out.squeeze() if hasattr(out, "squeeze") else out.reshape(())

    def jac_func(*inp):
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _scalar_jac(func, inputs, v, create_graph, strict, name):
    is_inputs_tuple, inputs = _prep_inputs(inputs, create_graph, name)
    v = _prep_v(v, inputs, is_inputs_tuple, create_graph, name, "the input to the user-provided function is")
    is_outputs_tuple, outputs = _call(func, inputs, strict, name)
    if is_outputs_tuple or not isinstance(outputs[0], Tensor):
        raise RuntimeError(f"The function given to {name} should return a single Tensor")
    if outputs[0].nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {name} should contain a single element")
    jac = _autograd_grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict=strict)
    return is_inputs_tuple, inputs, v, outputs, is_outputs_tuple, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for a scalar function."""
    with grad_mode.enable_grad():
        is_inputs_tuple, inputs, v, outputs, is_outputs_tuple, jac = _scalar_jac(func, inputs, v, create_graph,
                                                                                 strict, "vhp")
    return _product(outputs, is_outputs_tuple, jac, inputs, v, inputs, is_inputs_tuple, create_graph, strict,
                    "double_back")


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for a scalar function, by the double-vjp trick."""
    with grad_mode.enable_grad():
        is_inputs_tuple, inputs, v, outputs, is_outputs_tuple, jac = _scalar_jac(func, inputs, v, create_graph,
                                                                                 strict, "hvp")
        grad_jac = tuple(_creation.zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    return _product(outputs, is_outputs_tuple, double_back, grad_jac, v, inputs, is_inputs_tuple, create_graph,
                    strict, "double_back_trick")
