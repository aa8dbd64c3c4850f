"""What real programs reach for first: version gates, compile guards, legacy constructors,
and missing names (each must name the torch API)."""
import warnings

import torch
import torch.nn as nn

print("version", torch.__version__, torch.__version__ >= "2.0", torch.__version__ >= (2, 13),
      torch.__version__ < "2.14", torch.__version__ > "1.13.1", type(torch.__version__).__name__)
print("own", torch.version.retrograd, "cuda", torch.version.cuda)
model = nn.Linear(3, 2)
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    if hasattr(torch, "compile"):
        model = torch.compile(model)
    model = torch.compile(model, mode="max-autotune")
    scripted = torch.jit.script(model)
print("compile", type(model).__name__, scripted is model, len(w), torch.jit.is_scripting(),
      torch.compiler.is_compiling())
torch.set_float32_matmul_precision("high")
torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = True
print("flags", torch.get_float32_matmul_precision(), torch.backends.cudnn.benchmark,
      torch.backends.cuda.matmul.allow_tf32)
x = torch.FloatTensor(2, 3)
print("legacy", x.shape, x.type(), isinstance(x, torch.FloatTensor), torch.LongTensor([1, 2]).dtype)
for what in ("torch.nn.NoSuchLayer", "from torch.distributions import NoSuchDist", "x.no_such_method_"):
    try:
        if what.startswith("from"):
            exec(what)
        else:
            eval(what)
    except Exception as e:
        print("missing", type(e).__name__, e)
x.to_mkldnn()
