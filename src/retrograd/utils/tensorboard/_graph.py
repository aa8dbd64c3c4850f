"""retrograd's graph of one forward pass as a TensorBoard GraphDef.

The graph comes from ``retrograd.viz.graph`` (the autograd graph, grouped by module with
``record_modules``). TensorBoard draws operations and the edges between them, so function
nodes become operations named ``<Model>/<module path>/<function>``, leaves become
``Parameter`` nodes (named by ``named_parameters``) or ``IO Node`` inputs, and each output
an ``IO Node`` ``output/output.<k>``. Intermediate tensors and AccumulateGrad nodes are
edges, not nodes; the shape each operation produced is its ``_output_shapes``.
"""
import re

__all__ = ["graph_def"]

_BACKWARD = re.compile(r"Backward\d*$")


def _flat_tensors(x, out):
    from ..._tensor import Tensor
    if isinstance(x, Tensor):
        out.append(x)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _flat_tensors(v, out)
    elif isinstance(x, dict):
        for v in x.values():
            _flat_tensors(v, out)
    return out


def _shape_attr(shapes):
    from tensorboardX.proto.attr_value_pb2 import AttrValue
    from tensorboardX.proto.tensor_shape_pb2 import TensorShapeProto
    protos = [TensorShapeProto(dim=[TensorShapeProto.Dim(size=int(d)) for d in s]) for s in shapes if s is not None]
    return AttrValue(list=AttrValue.ListValue(shape=protos))


def graph_def(model, input_to_model=None, verbose=False):
    """The GraphDef of ``model(*input_to_model)`` (one forward pass, with gradients on)."""
    from tensorboardX.proto.graph_pb2 import GraphDef
    from tensorboardX.proto.node_def_pb2 import NodeDef
    from tensorboardX.proto.attr_value_pb2 import AttrValue
    from tensorboardX.proto.versions_pb2 import VersionDef
    from ..._tensor import Tensor
    from ... import autograd
    from ...viz import graph, record_modules
    from ...autograd.graph import AccumulateGrad

    if input_to_model is None:
        inputs = ()
    elif isinstance(input_to_model, (list, tuple)):
        inputs = tuple(input_to_model)
    else:
        inputs = (input_to_model,)
    # Floating inputs are recorded as leaves, so that the drawing shows where they enter.
    fed, names = [], {}
    for i, x in enumerate(inputs):
        if isinstance(x, Tensor) and (x.dtype.is_floating_point or x.dtype.is_complex) and not x.requires_grad:
            x = x.detach().requires_grad_(True)
        if isinstance(x, Tensor):
            names[f"input/input.{i}"] = x
        fed.append(x)
    with autograd.enable_grad(), record_modules(model) as rec:
        out = model(*fed)
    outs = _flat_tensors(out, [])
    if not outs:
        raise ValueError("add_graph: the model returned no tensor")
    params = dict(model.named_parameters()) if hasattr(model, "named_parameters") else {}
    g = graph(*outs, params=params, labels=names, modules=rec)
    top = type(model).__name__

    def scope(n):
        return top + ("/" + n.group.replace(".", "/") if n.group else "")

    node_name, used = {}, {}

    def unique(base):
        k = used.get(base, 0)
        used[base] = k + 1
        return base if k == 0 else f"{base}_{k}"

    input_names = {id(t): k for k, t in names.items()}
    param_names = {id(t): k for k, t in params.items()}
    for n in g.nodes.values():
        if n.kind == "tensor" and n.role == "leaf":
            o = n.obj
            if o is not None and id(o) in input_names:
                node_name[n.id] = (unique(input_names[id(o)]), "IO Node")
            elif o is not None and id(o) in param_names:
                node_name[n.id] = (unique(top + "/" + param_names[id(o)].replace(".", "/")), "Parameter")
            else:
                node_name[n.id] = (unique(scope(n) + "/" + (n.name or "tensor")), "Constant")
        elif n.kind == "function" and not isinstance(n.obj, AccumulateGrad):
            node_name[n.id] = (unique(scope(n) + "/" + _BACKWARD.sub("", n.label)), n.label)

    preds = {}
    for a, b, kind in g.edges:
        if kind == "data":
            preds.setdefault(b, []).append(a)

    def sources(nid):
        """The operations and leaves feeding node ``nid`` (in argument order), through
        tensors and AccumulateGrad nodes."""
        out, stack, seen = [], list(reversed(preds.get(nid, ()))), set()
        while stack:
            p = stack.pop()
            if p in seen:
                continue
            seen.add(p)
            if p in node_name:
                out.append(node_name[p][0])
            else:
                stack.extend(reversed(preds.get(p, ())))
        return out

    out_shapes = {}
    for a, b, kind in g.edges:
        na, nb = g.nodes[a], g.nodes[b]
        if kind == "data" and na.kind == "function" and nb.kind == "tensor":
            out_shapes.setdefault(a, []).append(nb.shape)

    nodes = []
    for n in g.nodes.values():
        if n.id not in node_name:
            continue
        name, op = node_name[n.id]
        attr = {}
        if n.kind == "tensor":
            attr["_output_shapes"] = _shape_attr([n.shape])
            attr["attr"] = AttrValue(s=f"{{ dtype : {n.dtype} }}".encode())
        else:
            attr["_output_shapes"] = _shape_attr(out_shapes.get(n.id, ()))
            if n.group and n.group in g.group_kinds:
                attr["attr"] = AttrValue(s=f"{{ module : {g.group_kinds[n.group]} }}".encode())
        nodes.append(NodeDef(name=name, op=op, input=sources(n.id), device="cpu", attr=attr))
    k = 0
    for n in g.nodes.values():
        if n.kind == "tensor" and n.role == "output":
            src = sources(n.id) if n.id not in node_name else [node_name[n.id][0]]
            nodes.append(NodeDef(name=f"output/output.{k}", op="IO Node", input=src, device="cpu",
                                 attr={"_output_shapes": _shape_attr([n.shape])}))
            k += 1
    gd = GraphDef(node=nodes, versions=VersionDef(producer=22))
    if verbose:
        print(gd)
    return gd
