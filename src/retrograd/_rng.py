"""PyTorch's CPU random streams, reproduced bit for bit.

The engine is the 32-bit Mersenne Twister (MT19937) seeded with the classic ``init_genrand``
recurrence from the seed's low 32 bits; NumPy's MT19937 bit generator produces the raw 32-bit
words (vectorised). How those words become samples was established by probing PyTorch 2.x:

* a 64-bit draw is two 32-bit words, the first one high;
* float32/float16/bfloat16 uniforms take the low 24 bits of one word (``* 2**-24``), float64
  ones the low 53 bits of a 64-bit draw (``* 2**-53``); ``from + u * (to - from)`` is one fused
  multiply-add in double precision (the bounds first rounded to the tensor's dtype);
* integers in ``[low, low + range)`` are ``low + word % range``, with a 32-bit word when
  ``range < 2**28`` and a 64-bit draw otherwise;
* normal samples of a contiguous tensor of 16 or more elements: the tensor is filled with
  uniforms, then each block of 16 becomes 16 normals by Box-Muller (``u1 = 1 - x[j]``,
  ``u2 = x[j + 8]``); when 16 does not divide the size, the last 16 are filled again and
  transformed again (half types: the first fill covers the whole blocks only). The float32
  transform is PyTorch's vectorised kernel with its own approximations of log, sin and cos:
  the single-precision NumPy evaluation here agrees to a few ulp, not bit for bit (float64 and
  the half types, after rounding, agree exactly). Smaller tensors draw each element as Box-Muller on two 53-bit uniforms
  (``r = sqrt(-2 log(1 - u2))``, angle ``2 pi u1``), returning ``r cos`` and keeping ``r sin``
  for the next sample (that cache is part of the generator's state).
"""
import math

import numpy as np

N = 624
DEFAULT_SEED = 67280421310721
_S32 = np.uint64(32)
_TWO_PI = 2.0 * math.pi
_RNG_KERNELS = []       # ops._accel_rng, loaded on first use (tests replace it)
_LONG_DRAW = 1 << 28      # integer ranges from here on use 64-bit draws


def seeded_key(seed):
    """The 624-word state ``init_genrand`` makes from ``seed`` (its low 32 bits)."""
    x = seed & 0xFFFFFFFF
    key = [x]
    for i in range(1, N):
        x = (1812433253 * (x ^ (x >> 30)) + i) & 0xFFFFFFFF
        key.append(x)
    return np.array(key, dtype=np.uint32)


class Engine:
    """A Mersenne Twister plus the cached second normal sample of the last Box-Muller pair."""
    __slots__ = ("bg", "gen", "cached", "fresh_key")

    def __init__(self, seed):
        self.bg = np.random.MT19937(0)
        self.gen = np.random.Generator(self.bg)
        self.reseed(seed)

    def reseed(self, seed):
        self.set_key(seeded_key(seed), N, fresh=True)
        self.cached = None

    def set_key(self, key, pos, fresh=False):
        """``fresh``: a state nothing was drawn from yet (PyTorch records it apart from one
        whose 624 words were all used, though both twist before the next draw)."""
        self.bg.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}
        self.fresh_key = np.array(key, dtype=np.uint32) if fresh else None

    def is_fresh(self, key, pos):
        return pos == N and self.fresh_key is not None and np.array_equal(key, self.fresh_key)

    def key_pos(self):
        st = self.bg.state["state"]
        return st["key"], int(st["pos"])

    # --- raw draws ---
    def u32(self, n):
        """``n`` 32-bit words, uint32 (NumPy's full-range integers are the raw words, one each)."""
        return self.gen.integers(0, 1 << 32, size=n, dtype=np.uint32)

    def u64(self, n):
        r = self.u32(2 * n).astype(np.uint64)
        return (r[0::2] << _S32) | r[1::2]

    # --- uniforms ---
    def unit24(self, n, dtype=np.float64):
        """Uniforms on [0, 1) from 24 bits of one word each (exact in float32 and float64)."""
        return (self.u32(n) & np.uint32(0xFFFFFF)).astype(dtype) * dtype(2.0 ** -24)

    def unit53(self, n):
        """Uniforms on [0, 1) from the low 53 bits of 64-bit draws (exact in float64)."""
        r = self.u32(2 * n).reshape(n, 2)
        out = (r[:, 0] & np.uint32(0x1FFFFF)).astype(np.float64)
        out *= 4294967296.0
        out += r[:, 1]
        out *= 2.0 ** -53
        return out

    def uniform(self, n, dtype, lo=0.0, hi=1.0):
        """``n`` uniforms on [lo, hi) as PyTorch's ``uniform_`` makes them for ``dtype``."""
        dtype = np.dtype(dtype)
        if dtype == np.float64:
            u = self.unit53(n)
            lo, hi = float(lo), float(hi)
            return u if lo == 0.0 and hi == 1.0 else fma(u, hi - lo, lo)
        if lo == 0.0 and hi == 1.0:
            out = self.unit24(n, np.float32).astype(dtype, copy=False)
        else:   # (float arithmetic on the bounds rounded to float; half types round its result)
            f_lo, f_hi = np.float32(lo), np.float32(hi)
            out = fma32(self.unit24(n), f_hi - f_lo, f_lo).astype(dtype, copy=False)
        # a sample that rounded up to ``hi`` becomes ``lo`` (PyTorch keeps [lo, hi) below double)
        if dtype == np.float32 and lo == 0.0 and hi == 1.0:
            return out    # (24 bits: never rounds up)
        top = out == np.asarray(hi).astype(dtype)
        if top.any():
            out[top] = np.asarray(lo).astype(dtype)
        return out

    # --- integers ---
    def below(self, n, rng, wide=None):
        """``n`` draws of ``word % rng`` as uint64 (``rng`` up to 2**64); ``wide``: 64-bit draws
        (by default for ranges from 2**28 on, as PyTorch's ``random_(from, to)``)."""
        if not (rng >= _LONG_DRAW if wide is None else wide):
            return self.u32(n) % np.uint64(rng)
        r = self.u64(n)
        return r if rng == 1 << 64 else r % np.uint64(rng)

    def integers(self, n, low, rng):
        """``low + word % rng`` as int64 (two's complement wrap for the full 64-bit range)."""
        v = self.below(n, rng)
        return (v + np.uint64(low % (1 << 64))).view(np.int64)

    def unit53_map(self, n, f, fast=None):
        """``f`` (a C-library function of one double, from ``math``) of ``n`` 53-bit uniforms:
        NumPy's own transcendental functions differ from the C library's in the last bit now
        and then, and PyTorch's serial kernels call the C library. ``fast`` names the same
        function among ``ops._accel_rng``'s compiled loops, with its extra arguments: used
        where numba is installed (the same bits, ~50x faster)."""
        u = self.unit53(n)
        if fast is not None and n >= 64:
            from .ops import _accel
            k = _accel.load(_RNG_KERNELS, "_accel_rng")
            if k is not None:
                out = np.empty(n, np.float64)
                getattr(k, fast[0])(u, out, *fast[1:])
                return out
        return np.fromiter(map(f, u.tolist()), np.float64, n)

    def permutation(self, n):
        """PyTorch's ``randperm``: a forward Fisher-Yates shuffle (step ``i`` swaps places ``i``
        and ``i + word % (n - i)``), one 32-bit word per step."""
        if n < 2:
            return np.arange(n, dtype=np.int64)
        z = (self.u32(n - 1) % np.arange(n, 1, -1, dtype=np.uint64)).astype(np.int64)
        return shuffle_result(z + np.arange(n - 1))

    # --- normals ---
    def normal_scalar(self, n, mean=0.0, std=1.0):
        """``n`` samples one at a time (small tensors), using and refilling the pair cache."""
        out = []
        for _ in range(n):
            if self.cached is not None:
                out.append(self.cached)
                self.cached = None
                continue
            u1, u2 = self.unit53(2).tolist()
            r = math.sqrt(-2.0 * math.log1p(-u2))
            theta = _TWO_PI * u1
            self.cached = r * math.sin(theta)
            out.append(r * math.cos(theta))
        v = np.array(out, dtype=np.float64)
        return v if mean == 0.0 and std == 1.0 else fma(v, float(std), float(mean))

    def normal(self, n, dtype, mean=0.0, std=1.0):
        """``n`` normal samples as PyTorch's ``normal_`` makes them for a contiguous ``dtype`` tensor."""
        dtype = np.dtype(dtype)
        if n < 16:
            return self.normal_scalar(n, mean, std).astype(dtype)
        if dtype == np.float64:
            x = self.unit53(n)
            tail = self.unit53(16) if n % 16 else None
            f = _box_muller64
        else:
            # (half types: the first fill covers the whole blocks only)
            x = self.unit24(n if dtype == np.float32 else n - n % 16, np.float32)
            tail = self.unit24(16, np.float32) if n % 16 else None
            f = _box_muller32
        whole = n - n % 16
        out = np.empty(n, dtype=np.float64 if dtype == np.float64 else np.float32)
        out[:whole] = f(x[:whole], mean, std)
        if tail is not None:
            out[n - 16:] = f(tail, mean, std)
        return out.astype(dtype, copy=False)


def shuffle_result(j):
    """The array ``arange(n)`` after the swaps ``(i, j[i])`` for i = 0, 1, ... (``j[i] >= i``,
    ``n = len(j) + 1``), without a Python loop over the swaps.

    Place i is final after step i, holding what place ``j[i]`` held then: the value that the
    last earlier step aimed at ``j[i]`` moved there, or ``j[i]`` itself if none did. The value
    a step k moves is what place k held at step k: by the same rule, the value moved there by
    the last earlier step aimed at k, and so on down a chain that ends at a place no earlier
    step aimed at, whose own index is the value. Chains are followed by pointer doubling."""
    m = len(j)
    n = m + 1
    steps = np.arange(m)
    order = np.argsort(j, kind="stable")     # by target, then by step
    js = j[order]
    new_group = np.empty(m, dtype=bool)
    new_group[0] = True
    np.not_equal(js[1:], js[:-1], out=new_group[1:])
    pred = np.empty(m, dtype=np.int64)      # the previous step aimed at the same place
    pred[order] = np.where(new_group, -1, np.concatenate(([-1], order[:-1])))
    last_at = np.full(n, -1, dtype=np.int64)   # the last step aimed at each place
    group_end = np.append(new_group[1:], True)
    last_at[js[group_end]] = order[group_end]
    own = last_at[:m]                        # steps aimed at place k come at or before step k
    prev = np.where(own == steps, pred, own)  # the last step before k aimed at place k
    root = np.where(prev >= 0, prev, steps)
    while True:
        nxt = root[root]
        if np.array_equal(nxt, root):
            break
        root = nxt
    out = np.empty(n, dtype=np.int64)
    out[:m] = np.where(pred >= 0, root[np.maximum(pred, 0)], j)
    out[m] = root[last_at[m]] if last_at[m] >= 0 else m
    return out


def _glibc_log(x):
    """The C library's ``log`` (what PyTorch's kernel calls), elementwise. NumPy's own float64
    log is a vectorised approximation that differs in the last bit now and then; SciPy's
    ``xlogy`` calls the C library."""
    try:
        from scipy.special import xlogy
    except ImportError:    # (then NumPy's: rarely one ulp away)
        return np.log(x)
    return xlogy(1.0, x)


def _box_muller64(x, mean, std):
    b = x.reshape(-1, 2, 8)
    u1, u2 = 1.0 - b[:, 0], b[:, 1]
    radius = np.sqrt(-2.0 * _glibc_log(u1))
    theta = _TWO_PI * u2
    out = np.empty_like(b)
    out[:, 0] = radius * np.cos(theta)
    out[:, 1] = radius * np.sin(theta)
    out = out.reshape(-1)
    return out if mean == 0.0 and std == 1.0 else fma(out, float(std), float(mean))


def _box_muller32(x, mean, std):
    # PyTorch's vectorised float kernel uses its own float32 log/sin/cos approximations: this
    # single-precision evaluation agrees to a few ulp, not bit for bit
    b = x.reshape(-1, 2, 8)
    one = np.float32(1)
    u1, u2 = one - b[:, 0], b[:, 1]
    radius = np.sqrt(np.float32(-2) * np.log(u1))
    theta = np.float32(_TWO_PI) * u2
    out = np.empty_like(b)
    out[:, 0] = radius * np.cos(theta)
    out[:, 1] = radius * np.sin(theta)
    out = out.reshape(-1)
    if mean == 0.0 and std == 1.0:
        return out
    return (out.astype(np.float64) * np.float64(np.float32(std)) + np.float64(np.float32(mean))).astype(np.float32)


# --- fused multiply-add in double precision ------------------------------------------------
# (the error-free transformations below also serve optim.optimizer.fma64)

_SPLIT = 134217729.0    # 2**27 + 1 (Veltkamp)


def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _two_prod(a, b):
    p = a * b
    ah = a * _SPLIT
    ah = ah - (ah - a)
    al = a - ah
    bh = b * _SPLIT
    bh = bh - (bh - b)
    bl = b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def fma32(a, b, c):
    """``a * b + c`` rounded once to float32, for float64 arrays ``a`` holding float32 values and
    float32 numbers ``b``, ``c``: the product is exact in double; the sum is rounded to odd in
    double, which then rounds to float32 as the exact sum would."""
    p = a * np.float64(b)
    if _exact_in_double(b, c):
        return (p + np.float64(c)).astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        s, err = _two_sum(p, np.float64(c) + np.zeros_like(p))
        s = _to_odd(s, err)
    return s.astype(np.float32)


def _exact_in_double(b, c):
    """Whether every ``u * b + c`` (``u`` a multiple of 2**-24 in [0, 1), ``b`` and ``c`` float32
    numbers) is exact in double: true unless the exponents of ``b`` and ``c`` lie far apart."""
    b, c = abs(float(b)), abs(float(c))
    if b == 0.0 or c == 0.0 or not math.isfinite(b + c):
        return b == 0.0 or c == 0.0
    lsb = min(float(np.spacing(np.float32(b))) * 2.0 ** -24, float(np.spacing(np.float32(c))))
    return (b + c) / lsb <= 2.0 ** 52


def _to_odd(v, err):
    """``v`` (a rounded sum whose error is ``err``) rounded to odd instead: when inexact and its
    last bit is even, one ulp towards the error."""
    fix = (err != 0) & ((v.view(np.int64) & 1) == 0) & np.isfinite(v)
    if fix.any():
        v = v.copy()
        v[fix] = np.nextafter(v[fix], np.where(err[fix] > 0, np.inf, -np.inf))
    return v


def fma(a, b, c):
    """``a * b + c`` rounded once (PyTorch's kernels are compiled with contraction), for
    float64 arrays ``a`` and numbers ``b``, ``c``: exact product and sum by error-free
    transformations, the small terms added with rounding to odd, then one rounding to
    nearest (Boldo and Melquiond's emulation)."""
    a = np.asarray(a, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        ph, pl = _two_prod(a, np.float64(b))
        sh, sl = _two_sum(np.float64(c) + np.zeros_like(a), ph)
        v, err = _two_sum(sl, pl)
        out = sh + _to_odd(v, err)
        bad = ~np.isfinite(out) | ~np.isfinite(ph)
        if bad.any():   # (infinities and nan: the plain expression)
            out[bad] = a[bad] * b + c
    return out
