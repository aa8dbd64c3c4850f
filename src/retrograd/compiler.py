"""``torch.compiler``: nothing is ever compiled in retrograd (it runs eagerly)."""
__all__ = ["is_compiling", "is_dynamo_compiling", "disable", "reset", "allow_in_graph", "assume_constant_result",
           "is_exporting"]


def is_compiling():
    """False: retrograd runs every op eagerly."""
    return False


is_dynamo_compiling = is_exporting = is_compiling


def disable(fn=None, recursive=True, *, reason=None):
    """Returns ``fn`` (or a decorator returning its argument): there is no compiler to disable."""
    if fn is None:
        return lambda f: f
    return fn


def allow_in_graph(fn):
    return fn


def assume_constant_result(fn):
    return fn


def reset():
    pass
