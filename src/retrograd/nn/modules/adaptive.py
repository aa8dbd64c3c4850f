"""AdaptiveLogSoftmaxWithLoss: the efficient softmax approximation for large vocabularies
(Grave et al.): a head over the frequent classes plus one token per cluster of rare classes,
each cluster scored by its own low-rank projection."""
from collections import namedtuple

from .. import functional as F
from .container import Sequential, ModuleList
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Log-probabilities of the targets (and their mean negative as the loss) under an adaptive
    softmax with the given ``cutoffs``."""

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False, device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        valid = (cutoffs == sorted(cutoffs) and min(cutoffs) > 0 and max(cutoffs) <= n_classes - 1
                 and len(set(cutoffs)) == len(cutoffs) and all(int(c) == c for c in cutoffs))
        if not valid:
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        kw = dict(device=device, dtype=dtype)
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, **kw),
                                        Linear(hidden, size, bias=False, **kw)))

    def reset_parameters(self):
        self.head.reset_parameters()
        for proj, out in self.tail:
            proj.reset_parameters()
            out.reset_parameters()

    def forward(self, input_, target_):
        tdim = target_.dim()
        if tdim == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.dim() != 2:
                raise RuntimeError("1D target tensor expects 2D input tensors, but found inputs with size",
                                   input_.shape)
        elif tdim == 0:
            if input_.dim() != 1:
                raise RuntimeError("0D target tensor expects 1D input tensors, but found inputs with size",
                                   input_.shape)
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = tdim > 0
        x = input_ if batched else input_.unsqueeze(0)
        t = target_ if batched else target_.unsqueeze(0)
        n = t.shape[0]
        # the head's class for each row: its own class in the shortlist, else its cluster's token
        head_class = t.clone()
        tail_logprob = x.new_zeros(n)
        covered = (t >= 0) & (t < self.shortlist_size)
        bounds = self.cutoffs
        for i in range(self.n_clusters):
            lo, hi = bounds[i], bounds[i + 1]
            in_cluster = (t >= lo) & (t < hi)
            rows = in_cluster.nonzero().reshape(-1)
            if rows.numel() == 0:
                continue
            covered = covered | in_cluster
            head_class.index_fill_(0, rows, self.shortlist_size + i)
            scores = F.log_softmax(self.tail[i](x.index_select(0, rows)), dim=1)
            picked = scores.gather(1, (t.index_select(0, rows) - lo).unsqueeze(1)).squeeze(1)
            tail_logprob = tail_logprob.index_copy(0, rows, picked)
        if not bool(covered.all()):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{t.min().item()}, {t.max().item()}] were found. ")
        head_logprob = F.log_softmax(self.head(x), dim=1)
        output = tail_logprob + head_logprob.gather(1, head_class.unsqueeze(1)).squeeze()
        loss = (-output).mean()
        if not batched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _get_full_log_prob(self, input, head_output):
        head_logprob = F.log_softmax(head_output, dim=1)
        out = input.new_empty((head_output.shape[0], self.n_classes))
        out[:, :self.shortlist_size] = head_logprob[:, :self.shortlist_size]
        for i in range(self.n_clusters):
            cluster = F.log_softmax(self.tail[i](input), dim=1)
            out[:, self.cutoffs[i]:self.cutoffs[i + 1]] = cluster + head_logprob[:, self.shortlist_size + i].unsqueeze(1)
        return out

    def log_prob(self, input):
        """Log-probabilities of every class, (N, n_classes) (or (n_classes,) for one input)."""
        batched = input.dim() > 1
        x = input if batched else input.unsqueeze(0)
        out = self._get_full_log_prob(x, self.head(x))
        return out if batched else out.squeeze(0)

    def predict(self, input):
        """The most likely class of each input (the full distribution is computed only for rows
        whose best head entry is a cluster token)."""
        batched = input.dim() > 1
        x = input if batched else input.unsqueeze(0)
        head_output = self.head(x)
        output = head_output.argmax(dim=1)
        rare = output >= self.shortlist_size
        if not bool(rare.any()):
            return output if batched else output.squeeze(0)
        if bool(rare.all()):
            return self._get_full_log_prob(x, head_output).argmax(dim=1)
        output[rare] = self._get_full_log_prob(x[rare], head_output[rare]).argmax(dim=1)
        return output if batched else output.squeeze(0)

