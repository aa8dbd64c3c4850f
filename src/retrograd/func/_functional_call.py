"""functional_call: run a module with some parameters and buffers replaced; and
stack_module_state for ensembles."""
import contextlib


def _resolve(module, name):
    parts = name.split(".")
    for p in parts[:-1]:
        module = getattr(module, p)
    return module, parts[-1]


def _swap(module, name, value):
    """Put ``value`` where ``name`` lives; return a callable undoing it."""
    owner, attr = _resolve(module, name)
    d = owner.__dict__
    for slot in ("_parameters", "_buffers"):
        store = d.get(slot)
        if store is not None and attr in store:
            old = store[attr]
            store[attr] = value

            def undo(store=store, attr=attr, old=old):
                store[attr] = old
            return undo
    if attr in d:
        old = d[attr]
        d[attr] = value

        def undo2(d=d, attr=attr, old=old):
            d[attr] = old
        return undo2
    # a name that is not there yet: set it for the call, remove it afterwards
    object.__setattr__(owner, attr, value)

    def undo3(owner=owner, attr=attr):
        try:
            object.__delattr__(owner, attr)
        except AttributeError:
            pass
    return undo3


@contextlib.contextmanager
def _reparametrize(module, values, tie_weights=True, strict=False):
    all_names = {}
    for kind in ("named_parameters", "named_buffers"):
        for n, t in getattr(module, kind)(remove_duplicate=False):
            all_names.setdefault(id(t), []).append(n)
    names = {n for ns in all_names.values() for n in ns}
    if strict:
        missing = sorted(n for n in names if n not in values)
        unexpected = sorted(n for n in values if n not in names)
        msgs = []
        if unexpected:
            msgs.append("Unexpected key(s): " + ", ".join(f"'{k}'" for k in unexpected) + ".")
        if missing:
            msgs.append("Missing key(s): " + ", ".join(f"'{k}'" for k in missing) + ".")
        if msgs:
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:\n\t" + "\n\t".join(msgs))
    values = dict(values)
    if tie_weights:
        for group in all_names.values():
            given = [n for n in group if n in values]
            if given and len(group) > 1:
                first = values[given[0]]
                for n in given[1:]:
                    if values[n] is not first:
                        raise ValueError(f"functional_call got multiple values for keys {sorted(given)}, which "
                                         "are tied. Consider using tie_weights=False")
                for n in group:
                    values.setdefault(n, first)
    undos = []
    try:
        for n, v in values.items():
            undos.append(_swap(module, n, v))
        yield
    finally:
        for u in reversed(undos):
            u()


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True,
                    strict=False):
    """Call ``module`` with its parameters and buffers replaced by those in the given
    dict (or tuple of dicts) for the duration of the call."""
    if isinstance(parameter_and_buffer_dicts, dict):
        values = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, (tuple, list)):
        values = {}
        seen = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                seen[k] = seen.get(k, 0) + 1
        dup = [k for k, c in seen.items() if c > 1]
        if dup:
            raise ValueError(f"{dup} appeared in multiple dictionaries; behavior of functional call is ambiguous")
        for d in parameter_and_buffer_dicts:
            values.update(d)
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(parameter_and_buffer_dicts)}")
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    kwargs = {} if kwargs is None else kwargs
    with _reparametrize(module, values, tie_weights, strict):
        return module(*args, **kwargs)


def stack_module_state(models):
    """(params, buffers): each model's parameters and buffers stacked along a new first
    dim, for vmap over an ensemble."""
    from .. import ops
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    t0 = type(models[0])
    if not all(type(m) is t0 for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    params = {}
    for k in all_params[0]:
        ts = [p[k] for p in all_params]
        rg = [t.requires_grad for t in ts]
        if any(rg) and not all(rg):
            raise RuntimeError(f"Expected {k} from each model to have the same .requires_grad")
        s = ops.stack(ts)
        params[k] = s.detach().requires_grad_() if all(rg) else s
    all_buffers = [dict(m.named_buffers()) for m in models]
    buffers = {k: ops.stack([b[k] for b in all_buffers]) for k in all_buffers[0]}
    return params, buffers
