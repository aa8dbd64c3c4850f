"""A backward trace (``retrograd.autograd.trace``) laid onto a Graph's node ids, for
the HTML step-through and the JSON output."""
from ..autograd.graph import AccumulateGrad
from ..autograd.tracing import format_grad, node_name

__all__ = ["steps_for"]


def steps_for(g, tr):
    """One dict per step: the node that ran, the gradient(s) that arrived, and for each
    input the node the gradient went to (ids of ``g``; None when not drawn)."""
    steps = []
    t_ids = g._t_ids
    for s in tr.steps:
        fn = s.node
        gid = g._fn_ids.get(id(fn))
        step = {"i": s.index, "node": gid, "name": node_name(fn),
                "grads_in": [format_grad(x) for x in s.grads_in], "sent": []}
        if isinstance(fn, AccumulateGrad):
            step["leaf"] = t_ids.get((id(fn), 0))
        else:
            for i, ((nf, nr), gout) in enumerate(zip(fn.next_functions, s.grads_out)):
                if nf is None:
                    step["sent"].append({"input": i, "to": None, "name": None, "grad": None})
                    continue
                if isinstance(nf, AccumulateGrad):
                    src = g._fn_ids.get(id(nf))
                else:
                    src = t_ids.get((id(nf), nr))
                step["sent"].append({"input": i, "to": src, "name": node_name(nf), "grad": format_grad(gout)})
        steps.append(step)
    return steps
