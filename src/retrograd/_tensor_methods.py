"""Tensor methods that need the engine (bound here: the engine sits above Tensor)."""
from ._tensor import Tensor
from .autograd import engine, anomaly  # noqa: F401  (anomaly wires its hooks into the engine)


def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Compute the gradient of this tensor w.r.t. the graph's leaves (accumulated in ``.grad``)."""
    engine.backward((self,), None if gradient is None else (gradient,), retain_graph, create_graph,
                    inputs=inputs)


Tensor.backward = backward
