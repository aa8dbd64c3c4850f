"""Op table entries: torch.fft (c2c, r2c, c2r transforms in 1, 2 and n dimensions, with the
n/s, dim and norm arguments), fftshift/ifftshift and fftfreq/rfftfreq. Complex transforms
take a complex input built from two real leaves, so both leaves' gradients are compared."""
from .core import OpInfo, Sample

OPS = []
_NONFINITE = ("a transform of an inf/nan gradient: pocketfft and torch's FFT spread NaN over different bins "
              "(finite upstreams are compared); the fuzzer plants inf/nan upstreams at random")
_C = dict(int_dtypes=False, skip={"infgrad": _NONFINITE, "fuzz": _NONFINITE}, fuzz=False)


def _fft(name, cplx):
    def op(lib, re, *args, **kwargs):
        x = re
        if cplx:
            im = args[0]
            args = args[1:]
            x = lib.complex(re, im)
        return getattr(lib.fft, name)(x, *args, **kwargs)
    op.__name__ = name
    return op


def _samples1(cplx, last=6):
    def samples(mk):
        pre = (lambda *sh: (mk.rand(*sh), mk.rand(*sh))) if cplx else (lambda *sh: (mk.rand(*sh),))
        yield Sample(*pre(3, last))
        yield Sample(*pre(3, last), n=4)
        yield Sample(*pre(3, last), n=9, norm="ortho")
        yield Sample(*pre(3, last), dim=0, norm="forward")
        yield Sample(*pre(last), norm="backward", kind="1d")
    return samples


def _samplesn(cplx, two=False):
    def samples(mk):
        pre = (lambda *sh: (mk.rand(*sh), mk.rand(*sh))) if cplx else (lambda *sh: (mk.rand(*sh),))
        yield Sample(*pre(3, 4))
        yield Sample(*pre(2, 3, 4), s=(5, 3), norm="ortho")
        yield Sample(*pre(2, 3, 4), dim=(0, 2), norm="forward")
        if not two:
            yield Sample(*pre(2, 3, 4), dim=(1,), s=(6,))
    return samples


for _n in ("fft", "ifft", "hfft"):
    OPS.append(OpInfo(_n, _fft(_n, True), _samples1(True), covers=(f"fft.{_n}",), **_C))
for _n in ("fft2", "ifft2", "irfft2"):
    OPS.append(OpInfo(_n, _fft(_n, True), _samplesn(True, two=True), **_C))
for _n in ("fftn", "ifftn", "irfftn"):
    OPS.append(OpInfo(_n, _fft(_n, True), _samplesn(True), **_C))
OPS.append(OpInfo("irfft", _fft("irfft", True), _samples1(True), **_C))
OPS.append(OpInfo("rfft", _fft("rfft", False), _samples1(False), **_C))
OPS.append(OpInfo("ihfft", _fft("ihfft", False), _samples1(False), int_dtypes=False, fuzz=False,
                  skip={**_C["skip"], "views": "torch's ihfft returns a lazily conjugated view; retrograd's conj is "
                                               "a copy"}))
OPS.append(OpInfo("ifft(real input)", _fft("ifft", False), _samples1(False), int_dtypes=False, fuzz=False,
                  skip={**_C["skip"], "views": "torch's ifft of a real input returns a lazily conjugated view; "
                                               "retrograd's conj is a copy"}))
OPS.append(OpInfo("rfft2", _fft("rfft2", False), _samplesn(False, two=True), **_C))
OPS.append(OpInfo("rfftn", _fft("rfftn", False), _samplesn(False), **_C))
OPS.append(OpInfo("fft(real input)", _fft("fft", False), _samples1(False), **_C))
OPS.append(OpInfo("fftshift", lambda lib, x, **kw: lib.fft.fftshift(x, **kw),
                  lambda mk: [Sample(mk.rand(3, 4)), Sample(mk.rand(3, 5), dim=1), Sample(mk.rand(5), dim=(0,))], **_C))
OPS.append(OpInfo("ifftshift", lambda lib, x, **kw: lib.fft.ifftshift(x, **kw),
                  lambda mk: [Sample(mk.rand(3, 4)), Sample(mk.rand(3, 5), dim=-1)], **_C))
OPS.append(OpInfo("fftfreq", lambda lib, x, n, d=1.0: lib.fft.fftfreq(n, d, dtype=x.dtype) * x,
                  lambda mk: [Sample(mk.rand(5), 5), Sample(mk.rand(4), 4, 0.25)], **_C))
OPS.append(OpInfo("rfftfreq", lambda lib, x, n, d=1.0: lib.fft.rfftfreq(n, d, dtype=x.dtype) * x,
                  lambda mk: [Sample(mk.rand(3), 5), Sample(mk.rand(3), 4, 0.25)], **_C))
