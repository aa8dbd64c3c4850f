"""grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian on the reverse-mode engine.

Each transform runs the function on fresh differentiable copies of its inputs and asks
the engine for the derivative. Transforms compose (grad of grad, jacfwd of jacrev)
because an inner transform records its derivative (create_graph) whenever an outer one
is active, so the outer one differentiates through it. Under vmap the inputs are
batched wrappers; their per-sample derivatives come from one backward over the batch:
the samples are independent, so differentiating the sum of the batched output gives
every sample's own derivative.
"""
from .._tensor import Tensor
from ..autograd import grad_mode, engine
from ._pytree import tree_flatten, tree_unflatten
from . import _vmap as V

_depth = [0]   # active grad-like transforms: an inner one must keep its graph


def _phys(x):
    return x._value if isinstance(x, V.BatchedTensor) else x


def _is_tensor(x):
    return isinstance(x, (Tensor, V.BatchedTensor))


def _prepare(x):
    """A differentiable stand-in for ``x``, batched at every active vmap level (so that the
    derivative is per sample even for an input shared by the batch)."""
    if not _is_tensor(x):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
    levels = V.active_levels()
    if levels:
        x = V.broadcast_to_levels(x, levels)
    p = _phys(x)
    p = p.view_as(p) if p.requires_grad else p.detach().requires_grad_()
    return V.BatchedTensor(p, x._levels) if isinstance(x, V.BatchedTensor) else p


def _wrap_like(g, like):
    return V.BatchedTensor(g, like._levels) if isinstance(like, V.BatchedTensor) else g


def _zeros_like(x):
    from .. import _creation
    return _creation.zeros_like(x)


def _backward(outs, cots, leaves, create_graph):
    """Derivatives of sum(out * cot) with respect to each leaf (physical tensors)."""
    if any(isinstance(c, V.BatchedTensor) and not isinstance(o, V.BatchedTensor) for o, c in zip(outs, cots)):
        return _backward_batched_cots(outs, cots, leaves, create_graph)
    po, pc = [], []
    for o, c in zip(outs, cots):
        o = _phys(o)
        if o.requires_grad:
            po.append(o)
            pc.append(_phys(c))
    pl = [_phys(x) for x in leaves]
    if po:
        gs = engine.grad(po, pl, pc, retain_graph=True, create_graph=create_graph, allow_unused=True)
    else:
        gs = [None] * len(pl)
    res = []
    for g, x in zip(gs, leaves):
        if g is None:
            g = _zeros_like(_phys(x))
        elif not create_graph:
            g = g.detach()
        res.append(_wrap_like(g, x))
    return res


def _backward_batched_cots(outs, cots, leaves, create_graph):
    """vmap over a vjp_fn whose function ran outside the vmap: unbatched outputs, batched
    cotangents. The graph holds one sample, so the engine runs it once per cotangent."""
    from .. import _creation
    if any(isinstance(o, V.BatchedTensor) for o in outs) or any(isinstance(x, V.BatchedTensor) for x in leaves):
        raise RuntimeError("vjp: cotangents batched at a vmap level the function's outputs are not batched at "
                           "are not supported together with batched outputs")
    levels = V._union(cots)
    sizes = tuple(V._size_of(lv) for lv in levels)
    n = 1
    for s_ in sizes:
        n *= s_
    po, pc = [], []
    for o, c in zip(outs, cots):
        if o.requires_grad:
            po.append(o)
            pc.append(V._to_levels(c, levels, expand=True).reshape((n,) + tuple(o.shape)))
    if po:
        gs = engine.grad(po, list(leaves), pc, retain_graph=True, create_graph=create_graph, allow_unused=True,
                         is_grads_batched=True)
    else:
        gs = [None] * len(leaves)
    res = []
    for g, x in zip(gs, leaves):
        if g is None:
            g = _creation.zeros((n,) + tuple(x.shape), dtype=x.dtype)
        elif not create_graph:
            g = g.detach()
        res.append(V.BatchedTensor(g.reshape(sizes + tuple(x.shape)), levels))
    return res


def _detach(x, keep):
    if keep or not _is_tensor(x):
        return x
    return V.BatchedTensor(x._value.detach(), x._levels) if isinstance(x, V.BatchedTensor) else x.detach()


def _check_argnums(argnums, nargs):
    def one(a):
        if not isinstance(a, int):
            raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(a)}")
        if not -nargs <= a < nargs:
            raise RuntimeError(f"Got argnum={a}, but only {nargs} positional inputs")
        return a % nargs
    if isinstance(argnums, tuple):
        if not argnums:
            raise RuntimeError("argnums must be non-empty")
        return tuple(one(a) for a in argnums)
    return one(argnums)


def _diff_args(args, argnums):
    """(new args, flat differentiable leaves, their spec)."""
    an = _check_argnums(argnums, len(args))
    picked = tuple(args[a] for a in an) if isinstance(an, tuple) else args[an]
    flat, spec = tree_flatten(picked)
    leaves = [_prepare(x) for x in flat]
    new = tree_unflatten(leaves, spec)
    args = list(args)
    if isinstance(an, tuple):
        for a, v in zip(an, new):
            args[a] = v
    else:
        args[an] = new
    return tuple(args), leaves, spec


def _keep_graph(leaves):
    return _depth[0] > 0 or any(_phys(x)._grad_fn is not None for x in leaves)


def _logical_dim(x):
    return x.dim()


def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning (gradient of ``func`` with respect to the ``argnums``
    arguments, ``func``'s value); ``func`` must return a scalar tensor (and an aux value
    when ``has_aux``)."""
    def wrapper(*args, **kwargs):
        with grad_mode.enable_grad():
            args, leaves, spec = _diff_args(args, argnums)
            keep = _keep_graph(leaves)
            _depth[0] += 1
            try:
                out = func(*args, **kwargs)
            finally:
                _depth[0] -= 1
            aux = None
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError("grad_and_value(f)(*args): output of function f should be a tuple: "
                                       "(output, aux) if has_aux is True")
                out, aux = out
            if not _is_tensor(out):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(out)}")
            if out.dim() != 0:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                                   f"tensor with {out.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs "
                                   "instead?")
            from .. import _creation
            cot = _creation.ones_like(_phys(out))
            gs = _backward([out], [cot], leaves, keep)
        g = tree_unflatten(gs, spec)
        value = _detach(out, keep)
        if has_aux:
            from ._pytree import tree_map
            return g, (value, tree_map(lambda a: _detach(a, keep), aux))
        return g, value
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """The gradient of scalar-valued ``func`` with respect to its ``argnums`` arguments,
    as a function (``torch.func.grad``)."""
    gv = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        if has_aux:
            return g, value[1]
        return g
    return wrapper


def vjp(func, *primals, has_aux=False):
    """(func(*primals), vjp_fn[, aux]): ``vjp_fn(cotangents)`` gives the vector-Jacobian
    product for every primal."""
    with grad_mode.enable_grad():
        flat, spec = tree_flatten(primals)
        leaves = [_prepare(x) for x in flat]
        keep = _keep_graph(leaves)
        _depth[0] += 1
        try:
            out = func(*tree_unflatten(leaves, spec))
        finally:
            _depth[0] -= 1
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError("vjp(f, *primals): output of function f should be a tuple: (output, aux) "
                                   "if has_aux is True")
            out, aux = out
    oflat, ospec = tree_flatten(out)
    for o in oflat:
        if not _is_tensor(o):
            raise RuntimeError(f"vjp(f, *primals): Expected f to be a function that has non-empty output but "
                               f"got output of type {type(o)}" if o is None else
                               "vjp(f, *primals): Expected f(*primals) to return only tensors, got unsupported "
                               f"type {type(o)}")

    def vjp_fn(cotangents, *, retain_graph=True, create_graph=None):
        cflat, cspec = tree_flatten(cotangents)
        if len(cflat) != len(oflat):
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function. cotangents: {cspec}, primal output: {ospec}")
        for c, o in zip(cflat, oflat):
            if tuple(c.shape) != tuple(o.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {c.shape} and output[0] "
                                   f"has a shape of {o.shape}.")
        cg = keep or _depth[0] > 0 if create_graph is None else create_graph
        with grad_mode.enable_grad():
            cots = [c if isinstance(c, V.BatchedTensor) and not isinstance(o, V.BatchedTensor)
                    else V.align_like(c, o) for c, o in zip(cflat, oflat)]
            gs = _backward(oflat, cots, leaves, cg)
        return tree_unflatten(gs, spec)

    from ._pytree import tree_map
    value = tree_map(lambda o: _detach(o, keep), out)
    if has_aux:
        return value, vjp_fn, tree_map(lambda a: _detach(a, keep), aux)
    return value, vjp_fn


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """(func(*primals), the Jacobian-vector product with ``tangents``), by forward-mode AD."""
    if not isinstance(primals, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it should be valid to "
                           "call f(*primals).")
    if not isinstance(tangents, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected tangents to be a tuple. E.g. it should be valid "
                           "to call f(*primals).")
    pflat, pspec = tree_flatten(primals)
    tflat, tspec = tree_flatten(tangents)
    if len(pflat) != len(tflat):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same python "
                           f"structure. For example, if primals is a tuple of 3 tensors, tangents also must be. "
                           f"Got primals with structure {pspec} and tangents with structure {tspec}")
    for p, t in zip(pflat, tflat):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError("Trying to set a forward gradient that has a different size than that of the "
                               f"original Tensor, this is not supported. Tensor is of size {list(p.shape)} while "
                               f"the given forward gradient is of size {list(t.shape)}.")
    from .. import _creation
    with grad_mode.enable_grad():
        leaves = [_prepare(x) for x in pflat]
        keep = _keep_graph(leaves)
        _depth[0] += 1
        try:
            out = func(*tree_unflatten(leaves, pspec))
        finally:
            _depth[0] -= 1
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError("jvp(f, primals, tangents): output of function f should be a tuple: "
                                   "(output, aux) if has_aux is True")
            out, aux = out
        oflat, ospec = tree_flatten(out)
        # double-vjp: u -> J^T u is linear in u, its derivative along the tangents is J t
        us = [_creation.zeros_like(_phys(o)).requires_grad_() for o in oflat]
        live = [(o, u) for o, u in zip(oflat, us) if _phys(o).requires_grad]
        outs_t = []
        if live:
            gs = engine.grad([_phys(o) for o, _ in live], [_phys(x) for x in leaves], [u for _, u in live],
                             retain_graph=True, create_graph=True, allow_unused=True)
            pairs = [(g, _phys(V.align_like(t, x))) for g, t, x in zip(gs, tflat, leaves) if g is not None]
            if pairs:
                jv = engine.grad([g for g, _ in pairs], [u for _, u in live], [t for _, t in pairs],
                                 retain_graph=True, create_graph=keep, allow_unused=True)
            else:
                jv = [None] * len(live)
            jmap = {id(u): j for (_, u), j in zip(live, jv)}
        else:
            jmap = {}
        for o, u in zip(oflat, us):
            j = jmap.get(id(u))
            if j is None:
                j = _creation.zeros_like(_phys(o))
            elif not keep:
                j = j.detach()
            outs_t.append(_wrap_like(j, o))
    from ._pytree import tree_map
    value = tree_map(lambda o: _detach(o, keep), out)
    res = (value, tree_unflatten(outs_t, ospec))
    if has_aux:
        return res + (tree_map(lambda a: _detach(a, keep), aux),)
    return res


def _jac(func, argnums, has_aux, forward):
    def wrapper(*args, **kwargs):
        from .. import _creation
        from ..ops import stack as _stack  # noqa: F401
        import retrograd as R
        an = _check_argnums(argnums, len(args))
        picked = tuple(args[a] for a in an) if isinstance(an, tuple) else args[an]
        iflat, ispec = tree_flatten(picked)

        def f_of(*leaves):
            a = list(args)
            new = tree_unflatten(list(leaves), ispec)
            if isinstance(an, tuple):
                for k, v in zip(an, new):
                    a[k] = v
            else:
                a[an] = new
            return func(*a, **kwargs)

        if not forward:
            res = vjp(f_of, *iflat, has_aux=has_aux)
            out, fn = res[0], res[1]
            oflat, ospec = tree_flatten(out)
            blocks = []   # blocks[o][i]: output o w.r.t. input i
            for o in oflat:
                n = o.numel()
                rows = [[] for _ in iflat]
                for k in range(n):
                    cot = _creation.zeros(n, dtype=o.dtype)
                    cot[k] = 1
                    cot = cot.reshape(o.shape)
                    cots = [cot if oo is o else _creation.zeros(tuple(oo.shape), dtype=oo.dtype) for oo in oflat]
                    gs = fn(tree_unflatten(cots, ospec))
                    for i, g in enumerate(gs):
                        rows[i].append(g)
                blocks.append([R.stack(r).reshape(tuple(o.shape) + tuple(x.shape)) if r else
                               _creation.zeros(tuple(o.shape) + tuple(x.shape), dtype=o.dtype)
                               for r, x in zip(rows, iflat)])
        else:
            cols = [[] for _ in iflat]
            out = aux = None
            for i, x in enumerate(iflat):
                n = x.numel()
                for k in range(n):
                    ts = []
                    for j, y in enumerate(iflat):
                        t = _creation.zeros(y.numel(), dtype=y.dtype)
                        if j == i:
                            t[k] = 1
                        ts.append(t.reshape(y.shape))
                    r = jvp(f_of, tuple(iflat), tuple(ts), has_aux=has_aux)
                    out, tan = r[0], r[1]
                    if has_aux:
                        aux = r[2]
                    cols[i].append(tree_flatten(tan)[0])
            if out is None:
                r = f_of(*iflat)
                out, aux = (r if has_aux else (r, None))
            oflat, ospec = tree_flatten(out)
            blocks = []
            for oi, o in enumerate(oflat):
                row = []
                for i, x in enumerate(iflat):
                    if cols[i]:
                        s = R.stack([c[oi] for c in cols[i]], dim=-1)
                        row.append(s.reshape(tuple(o.shape) + tuple(x.shape)))
                    else:
                        row.append(_creation.zeros(tuple(o.shape) + tuple(x.shape), dtype=o.dtype))
                blocks.append(row)
            res = (out, None, aux)
        per_out = [tree_unflatten(b, ispec) for b in blocks]
        result = tree_unflatten(per_out, ospec)
        if has_aux:
            return result, res[2]
        return result
    return wrapper


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of ``func`` with respect to its ``argnums`` arguments, by reverse mode
    (one vector-Jacobian product per output element)."""
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")
    return _jac(func, argnums, has_aux, forward=False)


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of ``func`` with respect to its ``argnums`` arguments, by forward mode
    (one Jacobian-vector product per input element)."""
    return _jac(func, argnums, has_aux, forward=True)


def hessian(func, argnums=0):
    """The Hessian of scalar ``func``: jacfwd of jacrev."""
    return jacfwd(jacrev(func, argnums), argnums)
