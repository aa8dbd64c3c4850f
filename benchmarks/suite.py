"""retrograd's benchmark suite, side by side with PyTorch.

    python -m benchmarks [--quick] [--threads N] [--cases gpt,cnn] [--readme] [--png FILE]
    retrograd bench [same options]

Every case runs retrograd and (when it is installed) PyTorch in this process, interleaved:
each round times one library then the other (the order alternating), so that a busy spell on
a shared machine hits both alike. Single-threaded runs measure the process's CPU time (time
spent waiting for a core another program holds does not count: on a loaded machine it
stretches long operations far more than short ones), other runs wall-clock time (--clock). The
table gives the median of all samples per library and the ratio retrograd's time / PyTorch's
(below 1: retrograd is faster) as the median over the rounds of each round's ratio of
medians: the two libraries' samples of one round lie seconds apart, so a slow spell of a
shared virtual machine (whose speed was seen to drift by 1.4x from one minute to the next)
cancels out of each round's ratio, where it would not out of the ratio of two medians taken
over all rounds. Both run
single-threaded by default (threadpoolctl limits NumPy's BLAS, torch.set_num_threads(1));
``--threads N`` uses N threads, ``--threads 0`` leaves each library's default. Peak RSS per
case and library is the high-water mark (VmHWM) of a process that imported only that library
and runs only that case, where /proc allows it.
"""
import argparse
import datetime
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SRC = os.path.join(ROOT, "src")
README = os.path.join(ROOT, "README.md")
BEGIN, END = "<!-- bench-table:begin -->", "<!-- bench-table:end -->"
_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _use_local_src():
    # benchmark this checkout's retrograd, not an installed copy
    if os.path.isdir(os.path.join(SRC, "retrograd")) and SRC not in sys.path[:1]:
        sys.path.insert(0, SRC)


def set_threads(threads, with_retrograd=True):
    """Limit BLAS/OpenMP pools to ``threads`` (0: leave them), retrograd's own too unless
    ``with_retrograd`` is false (it is then not imported). Returns how it was done."""
    if not threads:
        return "library defaults"
    try:
        from threadpoolctl import threadpool_limits
        threadpool_limits(limits=threads)
        how = "threadpoolctl"
    except ImportError:
        if "numpy" in sys.modules:
            how = "environment (numpy already loaded: may not apply; pip install threadpoolctl)"
        else:
            how = "environment"
        for v in _ENV:
            os.environ[v] = str(threads)
    if with_retrograd:
        try:
            import retrograd
            retrograd.set_num_threads(threads)
        except Exception:
            pass
    return how


def steady_malloc():
    """Fix glibc's mmap and trim thresholds (32 and 64 MiB) for the whole run.

    glibc raises its mmap threshold the first time a large block is freed, so a library that
    allocates each tensor from the system (PyTorch) page-faults on every large buffer until an
    earlier case has freed a big one, and a case's figure would depend on which cases ran before
    it (2,000 faults and twice the time per depthwise step when run alone). Fixed thresholds at
    the level glibc itself reaches give every case the warm state. (``import retrograd`` sets the
    same values itself, see retrograd/_alloc.py; here they hold with ``--no-torch`` and
    ``RETROGRAD_MALLOC=system`` too, and for PyTorch in the same process either way.)"""
    try:
        import ctypes
        libc = ctypes.CDLL("libc.so.6")
        M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
        ok = libc.mallopt(M_MMAP_THRESHOLD, 32 << 20) and libc.mallopt(M_TRIM_THRESHOLD, 64 << 20)
        return bool(ok)
    except (OSError, AttributeError):
        return False


def load_libs(no_torch, threads):
    _use_local_src()
    import retrograd
    libs = [("retrograd", retrograd)]
    if not no_torch:
        try:
            import torch
        except ImportError:
            torch = None
        if torch is not None:
            if threads:
                torch.set_num_threads(threads)
            libs.append(("torch", torch))
    return libs


# ----------------------------------------------------------------------------- timing

def _scale(unit):
    return 1e6 if unit.startswith("µs") else 1e3


def measure(case, libs, quick, rounds, target):
    """Median per library (in the case's unit) over ``rounds`` interleaved rounds of samples."""
    runs = {}
    for name, lib in libs:
        run = case.build(lib, quick)
        t0 = time.perf_counter()
        run()                                   # warm-up: lazy imports, buffers, caches
        one = time.perf_counter() - t0
        if one < target:                        # a second call sizes the samples of a round
            t0 = time.perf_counter()
            run()
            one = max(time.perf_counter() - t0, 1e-6)
        reps = 1 if quick else max(1, min(200, int(target / one)))
        runs[name] = (run, reps)
    samples = {name: [] for name, _ in libs}
    per_round = {name: [] for name, _ in libs}
    order = [name for name, _ in libs]
    if case.max_rounds:
        rounds = min(rounds, case.max_rounds)
    for r in range(rounds):
        for name in (order if r % 2 == 0 else order[::-1]):
            run, reps = runs[name]
            got = [run() for _ in range(reps)]
            samples[name].extend(got)
            per_round[name].append(statistics.median(got))
        gc.collect()
    runs.clear()
    gc.collect()
    s = _scale(case.unit)
    times = {name: statistics.median(v) * s for name, v in samples.items()}
    return times, {n: len(v) for n, v in samples.items()}, paired_ratio(per_round)


def paired_ratio(per_round):
    """The median over rounds of retrograd's round median / PyTorch's (None without both)."""
    rg, tt = per_round.get("retrograd"), per_round.get("torch")
    if not rg or not tt:
        return None
    return statistics.median(a / b for a, b in zip(rg, tt) if b > 0)


def _ratio(r):
    """A result's ratio: the paired one where measured, else the ratio of the medians."""
    if r.get("ratio") is not None:
        return r["ratio"]
    rg, tt = r["times"].get("retrograd"), r["times"].get("torch")
    return rg / tt if rg is not None and tt else None


# ------------------------------------------------------------------------- peak memory

def _status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024.0
    return None


def _peak_of(case, lib, quick):
    if case.name != "import":                   # "import": the process as it is after the import
        run = case.build(lib, quick)
        for _ in range(2):
            run()
    return _status("VmHWM")


def rss_child(lib_name, names, quick, threads):
    """In a child process that imports only one library: print ``{case: peak RSS MiB}`` as
    JSON. Each case runs in a process of its own, forked after the import (what a case leaves
    behind must not count for the next; the fork keeps the library's pages in its RSS)."""
    set_threads(threads, with_retrograd=lib_name != "torch")
    if lib_name == "torch":
        import torch as lib                     # alone: retrograd's memory must not count as torch's
        if threads:
            lib.set_num_threads(threads)
    else:
        _use_local_src()
        import retrograd as lib
    from .cases import select
    out = {}
    for case in select(names):
        if not hasattr(os, "fork"):
            out[case.name] = _peak_of(case, lib, quick)
            continue
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:                            # the case's own process
            os.close(r)
            try:
                os.write(w, json.dumps(_peak_of(case, lib, quick)).encode())
            finally:
                os._exit(0)
        os.close(w)
        with os.fdopen(r) as f:
            got = f.read()
        os.waitpid(pid, 0)
        out[case.name] = json.loads(got) if got else None
    print(json.dumps(out))


def measure_rss(names, libs, quick, threads):
    """Peak RSS (MiB) per case and library, or {} where /proc/self/status has no VmHWM."""
    if _status("VmHWM") is None:
        return {}
    res = {}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, SRC] + sys.path))
    for lib_name, _ in libs:
        cmd = [sys.executable, "-m", "benchmarks", "--rss-child", lib_name, "--threads", str(threads),
               "--cases", ",".join(names)] + (["--quick"] if quick else [])
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
        if out.returncode != 0:
            print(f"peak RSS on {lib_name} not measured:\n{out.stderr[-1500:]}", file=sys.stderr)
            continue
        res[lib_name] = json.loads(out.stdout.strip().splitlines()[-1])
    return res


# ------------------------------------------------------------------------------ output

def _fmt(v, unit):
    if v is None:
        return "-"
    if unit == "ms" and v >= 1000:
        return f"{v / 1000:.2f} s"
    digits = 2 if v < 10 else 1 if v < 100 else 0
    return f"{v:.{digits}f} {unit}"


def _mib(v):
    return "-" if v is None else f"{v:.0f} MiB"


def rows_of(results):
    """Table rows: label, retrograd, torch, ratio, rss retrograd, rss torch (strings)."""
    rows = []
    for r in results:
        rg, tt = r["times"].get("retrograd"), r["times"].get("torch")
        q = _ratio(r)
        ratio = "-" if q is None else f"{q:.2f}x"
        rows.append([r["label"], _fmt(rg, r["unit"]), _fmt(tt, r["unit"]), ratio,
                     _mib(r["rss"].get("retrograd")), _mib(r["rss"].get("torch"))])
    return rows


HEADER = ["benchmark", "retrograd", "PyTorch", "ratio", "peak RSS rg", "peak RSS torch"]


def text_table(results):
    rows = rows_of(results)
    w = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(HEADER)]
    line = "  ".join(h.ljust(w[0]) if i == 0 else h.rjust(w[i]) for i, h in enumerate(HEADER))
    out = [line, "-" * len(line)]
    for row in rows:
        out.append("  ".join(c.ljust(w[0]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(row)))
    return "\n".join(out)


def _blas_text():
    """Which BLAS retrograd's matrix products run on here (MKL where installed, see ops._blas)."""
    try:
        from retrograd.ops import _blas
        return _blas.describe()
    except Exception:
        return "NumPy's BLAS"


def markdown_table(results, meta):
    head = ["benchmark", "retrograd", "PyTorch", "retrograd time / PyTorch time", "peak RSS retrograd",
            "peak RSS PyTorch"]
    out = [f"Generated by `python -m benchmarks --readme` on {meta['date']} ({meta['machine']}; "
           f"{meta['threads_text']}; {'CPU' if meta['clock'] == 'cpu' else 'wall-clock'} time, "
           f"medians of {meta['rounds']} interleaved rounds, the ratio the median of the rounds' ratios; "
           f"PyTorch {meta['torch'] or 'not installed'}, NumPy {meta['numpy']}"
           f"{'; retrograd on ' + meta['blas'] if meta.get('blas') else ''}). "
           "A ratio below 1 means retrograd is faster.", "",
           "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows_of(results):
        out.append("| " + " | ".join(row) + " |")
    return "\n".join(out)


def write_readme(path, table):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{path} has no {BEGIN} ... {END} markers")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with open(path, "w", encoding="utf-8") as f:
        f.write(head + BEGIN + "\n" + table + "\n" + END + tail)


def plot(results, path, meta):
    """A horizontal bar chart of the ratios (matplotlib, optional). Returns the path or None."""
    pairs = [(r["name"], _ratio(r)) for r in results if _ratio(r) is not None]
    if not pairs:
        return None
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    names = [p[0] for p in pairs][::-1]
    ratios = [p[1] for p in pairs][::-1]
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(pairs) + 1.2))
    ax.barh(names, ratios, color=["#3a7d44" if v <= 1 else "#c0392b" for v in ratios])
    ax.axvline(1.0, color="black", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("retrograd time / PyTorch time (log scale; < 1: retrograd faster)")
    ax.set_title(f"retrograd vs PyTorch, {meta['threads_text']}, {meta['clock']} time, {meta['date']}",
                 fontsize=10)
    for y, v in enumerate(ratios):
        ax.text(v, y, f" {v:.2f}", va="center", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# ----------------------------------------------------------------------------- profile

def profile(case, lib, quick, seconds=3.0, top=25):
    """Profile ``case`` on ``lib`` with pyinstrument for about ``seconds``; print the functions
    with the most time of their own (flat, percent of total), then the top of the call tree."""
    from pyinstrument import Profiler
    from pyinstrument.renderers import ConsoleRenderer
    run = case.build(lib, quick)
    for _ in range(3):     # warm-up: lazy imports and compiled kernels load on the first steps
        run()
    prof = Profiler(interval=0.0005)
    n, t0 = 0, time.perf_counter()
    prof.start()
    while time.perf_counter() - t0 < seconds:
        run()
        n += 1
    prof.stop()
    flat = prof.output(ConsoleRenderer(flat=True, time="percent_of_total", unicode=False, color=False))
    tree = prof.output(ConsoleRenderer(time="percent_of_total", unicode=False, color=False, short_mode=False))
    print(f"{case.name} on {lib.__name__}: {n} calls in {time.perf_counter() - t0:.1f} s "
          f"({(time.perf_counter() - t0) / n * 1e3:.1f} ms per call incl. profiling)")
    print("\n".join(flat.splitlines()[:top + 6]))
    print("\n".join(tree.splitlines()[:top + 6]))


# -------------------------------------------------------------------------------- main

def parse(argv):
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one round: checks that the suite runs")
    ap.add_argument("--threads", type=int, default=1, help="BLAS/intra-op threads for both (0: defaults)")
    ap.add_argument("--cases", default="", help="comma-separated case ids (default: all; see --list)")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("--deep", action="store_true", help="also the 1,000,000-deep chain")
    ap.add_argument("--rounds", type=int, default=None, help="interleaved rounds per case (default 5; quick 1)")
    ap.add_argument("--target", type=float, default=0.25, help="seconds per library per round (default 0.25)")
    ap.add_argument("--clock", choices=("cpu", "wall"), default=None,
                    help="what a sample measures: this process's CPU time (default with one thread: a "
                         "shared machine's other work does not count) or wall-clock time (default otherwise)")
    ap.add_argument("--no-torch", action="store_true", help="time retrograd alone")
    ap.add_argument("--no-rss", action="store_true", help="skip the peak-RSS child processes")
    ap.add_argument("--rss", action="store_true", help="measure peak RSS in --quick mode too")
    ap.add_argument("--png", default="bench_ratios.png", help="bar chart of the ratios ('' for none)")
    ap.add_argument("--json", default="", help="write the results as JSON to this file")
    ap.add_argument("--readme", nargs="?", const=README, default=None,
                    help="regenerate the speed table between the markers of README.md (or of the given file)")
    ap.add_argument("--profile", default=None, metavar="CASE",
                    help="profile one case on retrograd with pyinstrument instead of timing")
    ap.add_argument("--rss-child", default=None, help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def main(argv=None):
    """Run the suite; print the table; write the PNG / JSON / README table asked for."""
    a = parse(sys.argv[1:] if argv is None else argv)
    _use_local_src()        # before anything imports retrograd (set_threads does)
    names = [n for n in a.cases.split(",") if n]
    if a.rss_child:
        return rss_child(a.rss_child, names, a.quick, a.threads)
    from .cases import CASES, select
    if a.list:
        for c in CASES:
            print(f"{c.name:<18} {c.label}" + ("  (opt-in)" if c.opt_in else ""))
        return 0
    steady_malloc()
    how = set_threads(a.threads)
    clock = a.clock or ("cpu" if a.threads == 1 else "wall")
    from . import cases as _cases
    _cases.perf = time.process_time if clock == "cpu" else time.perf_counter
    if a.profile:
        load_libs(True, a.threads)
        import retrograd
        return profile(select([a.profile])[0], retrograd, a.quick)
    libs = load_libs(a.no_torch, a.threads)
    cases = select(names, a.deep, a.quick)
    rounds = a.rounds or (1 if a.quick else 5)
    import numpy as np
    torch = dict(libs).get("torch")
    threads_text = (f"{a.threads} thread{'s' if a.threads != 1 else ''} ({how})" if a.threads
                    else "default threads")
    meta = {"date": datetime.date.today().isoformat(), "machine": f"{os.cpu_count()} CPUs, {platform.machine()}",
            "threads": a.threads, "threads_text": threads_text, "clock": clock, "rounds": rounds, "quick": a.quick,
            "torch": getattr(torch, "__version__", None), "numpy": np.__version__,
            "python": platform.python_version(), "load": os.getloadavg()[0],
            "retrograd_path": os.path.dirname(dict(libs)["retrograd"].__file__), "blas": _blas_text()}
    print(f"retrograd benchmark suite{' (--quick: tiny sizes)' if a.quick else ''}: {len(cases)} cases, "
          f"{threads_text}, {clock} time, "
          f"{'PyTorch ' + meta['torch'] if torch else 'without PyTorch'}, {rounds} interleaved round(s), "
          f"load average {meta['load']:.1f}; retrograd's products: {meta['blas']}", flush=True)
    t_start = time.perf_counter()
    results = []
    for case in cases:
        t0 = time.perf_counter()
        times, counts, ratio = measure(case, libs, a.quick, rounds, a.target)
        results.append({"name": case.name, "label": case.label, "unit": case.unit, "group": case.group,
                        "times": times, "samples": counts, "ratio": ratio, "rss": {}})
        rg, tt = times.get("retrograd"), times.get("torch")
        print(f"  {case.name:<18} retrograd {_fmt(rg, case.unit):>12}  torch {_fmt(tt, case.unit):>12}  "
              f"{(f'{ratio:.2f}x' if ratio is not None else ''):>7}  ({time.perf_counter() - t0:.1f} s)", flush=True)
    if not a.no_rss and (a.rss or not a.quick):
        rss = measure_rss([c.name for c in cases], libs, a.quick, a.threads)
        for r in results:
            r["rss"] = {lib: v[r["name"]] for lib, v in rss.items() if v.get(r["name"]) is not None}
    meta["seconds"] = time.perf_counter() - t_start
    print()
    print(text_table(results))
    print(f"\n(ratio: retrograd's time / PyTorch's, the median of the rounds' ratios; below 1 means retrograd is faster; "
          f"{meta['seconds']:.0f} s in all)")
    if a.png:
        p = plot(results, a.png, meta)
        if p:
            print(f"bar chart of the ratios: {p}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": meta, "results": results}, f, indent=1)
    if a.readme:
        write_readme(a.readme, markdown_table(results, meta))
        print(f"speed table written to {a.readme}")
    return 0
