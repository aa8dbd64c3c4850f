"""Op table entries: complex numbers (conj, real/imag, angle, view_as_real/view_as_complex,
complex, polar, adjoint). The complex operands are built inside each op from real leaves with
``complex(re, im)``, so the real leaves' gradients check PyTorch's conjugate Wirtinger
convention through every op (tests/test_complex.py checks complex leaves directly)."""
from .core import OpInfo, Sample

OPS = []
# Complex arithmetic on inf/nan: torch's C++ complex multiply and NumPy's give different
# inf/nan patterns (e.g. (inf+0j) * (1+1j)); the finite behaviour is what these entries check.
_NONFINITE = "complex products of inf/nan: torch's c10::complex and NumPy's arithmetic differ in inf/nan patterns"
# The fuzzer plants inf/nan in its upstream gradients at random: these entries stay out of it.
_C = dict(int_dtypes=False, skip={"infgrad": _NONFINITE, "fuzz": _NONFINITE}, fuzz=False)


def _z(lib, re, im):
    return lib.complex(re, im)


def _two(mk, *shape):
    return [Sample(mk.rand(*shape), mk.rand(*shape)), Sample(mk.rand(3), mk.rand(3), kind="1d")]


def _add(name, fn, samples=lambda mk: _two(mk, 2, 3), **kw):
    def op(lib, re, im, *args, **kwargs):
        return fn(lib, _z(lib, re, im), *args, **kwargs)
    op.__name__ = name
    kw["skip"] = {**_C["skip"], **kw.get("skip", {})}
    OPS.append(OpInfo(name, op, samples, **{**_C, **kw}))


_add("conj", lambda lib, z: z.conj() * z)
_add("conj_physical", lambda lib, z: z.conj_physical() * (z + 1))
_add("conj_physical_", lambda lib, z: (z * 1).conj_physical_())
_add("resolve_conj", lambda lib, z: z.conj().resolve_conj() * z, covers=("is_conj",))
_add("resolve_neg", lambda lib, z: z.resolve_neg() * z, covers=("is_neg",), skip={"nonfinite": _NONFINITE})
_add("angle", lambda lib, z: z.angle(),
     gradcheck_kinds=("basic", "noncontig", "negstride"))
_add("real", lambda lib, z: (z * z).real, view=True, skip={"nonfinite": _NONFINITE})
_add("imag", lambda lib, z: (z * z).imag, view=True)
_add("adjoint(complex)", lambda lib, z: z.adjoint() @ z)
_add("mH(complex)", lambda lib, z: z.mH @ z)
_add("H(complex)", lambda lib, z: z.H @ z)
_add("view_as_real", lambda lib, z: lib.view_as_real(z * z), view=True, skip={"nonfinite": _NONFINITE})
_add("view_as_complex", lambda lib, z: lib.view_as_complex(lib.view_as_real(z).mul(2)) * z,
     skip={"nonfinite": _NONFINITE})
OPS.append(OpInfo("complex", lambda lib, a, b: lib.complex(a, b) ** 2, lambda mk: _two(mk, 2, 3), **_C))
OPS.append(OpInfo("polar", lambda lib, a, b: lib.polar(a, b) ** 2,
                  lambda mk: [Sample(mk.pos(2, 3), mk.rand(2, 3)), Sample(mk.pos(3), mk.rand(3), kind="1d")],
                  **_C))
OPS.append(OpInfo("abs(complex)", lambda lib, a, b: lib.complex(a, b).abs(), lambda mk: _two(mk, 2, 3), **_C))
OPS.append(OpInfo("sgn(complex)", lambda lib, a, b: lib.complex(a, b).sgn(), lambda mk: _two(mk, 2, 3), **_C))
for _name in ("exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "reciprocal", "neg"):
    OPS.append(OpInfo(f"{_name}(complex)", lambda lib, a, b, _n=_name: getattr(lib.complex(a, b), _n)(),
                      lambda mk: _two(mk, 2, 3), nonfinite=False, **_C))
OPS.append(OpInfo("mul/div/pow(complex)", lambda lib, a, b: (lib.complex(a, b) * lib.complex(b, a)
                                                            / lib.complex(a + 3, b)) ** lib.complex(b, a),
                  lambda mk: [Sample(mk.pos(2, 3), mk.pos(2, 3))], nonfinite=False, **_C))
OPS.append(OpInfo("matmul(complex)", lambda lib, a, b: lib.complex(a, b) @ lib.complex(b, a).mT,
                  lambda mk: [Sample(mk.rand(2, 3), mk.rand(2, 3))], **_C))
OPS.append(OpInfo("sum/mean/prod(complex)", lambda lib, a, b: lib.complex(a, b).prod(0) + lib.complex(a, b).mean()
                  + lib.complex(a, b).sum(1, keepdim=True), lambda mk: [Sample(mk.rand(2, 3), mk.rand(2, 3))],
                  nonfinite=False, **_C))
OPS.append(OpInfo("einsum(complex)", lambda lib, a, b: lib.einsum("ij,kj->ik", lib.complex(a, b), lib.complex(b, a)),
                  lambda mk: [Sample(mk.rand(2, 3), mk.rand(2, 3))],
                  **{**_C, "skip": {**_C["skip"], "views": "einsum as one permuted mm returns a copy where torch "
                                                           "returns a view (core.py's einsum fuzz:views entry)"}}))
