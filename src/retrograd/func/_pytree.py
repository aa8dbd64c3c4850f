"""A minimal pytree: nested tuples, lists, dicts and namedtuples whose leaves are anything
else. Enough for the argument and output structures the function transforms accept."""


def tree_flatten(tree):
    """(leaves, spec): ``tree_unflatten(leaves, spec)`` rebuilds ``tree``."""
    leaves = []

    def go(t):
        if isinstance(t, tuple) and hasattr(t, "_fields"):
            return ("namedtuple", type(t), [go(x) for x in t])
        if isinstance(t, (tuple, list)):
            return (type(t), [go(x) for x in t])
        if isinstance(t, dict):
            return (dict, [(k, go(v)) for k, v in t.items()])
        leaves.append(t)
        return None

    return leaves, go(tree)


def tree_unflatten(leaves, spec):
    it = iter(leaves)

    def go(s):
        if s is None:
            return next(it)
        if s[0] == "namedtuple":
            return s[1](*[go(x) for x in s[2]])
        if s[0] is dict:
            return {k: go(v) for k, v in s[1]}
        return s[0](go(x) for x in s[1])

    return go(spec)


def tree_map(fn, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def spec_str(spec):
    """torch's TreeSpec rendering, for error messages."""
    if spec is None:
        return "*"
    if spec[0] == "namedtuple":
        return f"TreeSpec({spec[1].__name__}, None, [{', '.join(spec_str(x) for x in spec[2])}])"
    if spec[0] is dict:
        return f"TreeSpec(dict, {[k for k, _ in spec[1]]}, [{', '.join(spec_str(v) for _, v in spec[1])}])"
    return f"TreeSpec({spec[0].__name__}, None, [{', '.join(spec_str(x) for x in spec[1])}])"
