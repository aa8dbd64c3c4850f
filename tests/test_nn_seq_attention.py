"""scaled_dot_product_attention and MultiheadAttention against PyTorch."""
import numpy as np
import pytest

import retrograd
import retrograd.nn as rnn
import retrograd.nn.functional as RF
from helpers import check, gradcheck_op, needs_torch, torch
from nn_seq_helpers import lib_of, module_parity


def sdpa(*a, **kw):
    return lib_of(a[0]).nn.functional.scaled_dot_product_attention(*a, **kw) * 1.0


SDPA = [([(2, 3, 4), (2, 5, 4), (2, 5, 6)], {}),
        ([(2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 6)], dict(is_causal=True)),
        ([(2, 2, 4, 4), (2, 2, 4, 4), (2, 2, 4, 3)], dict(is_causal=True, scale=0.3)),
        ([(3, 4), (5, 4), (5, 2)], {}),
        ([(2, 4, 3, 4), (2, 2, 5, 4), (2, 2, 5, 6)], dict(enable_gqa=True))]


@pytest.mark.parametrize("specs,kw", SDPA)
def test_sdpa_parity(specs, kw):
    check(lambda *a: sdpa(*a, **kw), specs)


def test_sdpa_masks():
    rng = np.random.default_rng(0)
    m = rng.random((3, 5)) > 0.3
    m[:, 0] = True
    check(lambda q, k, v: sdpa(q, k, v, attn_mask=lib_of(q).tensor(m)), [(2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 6)])
    # an additive float mask gets a gradient too
    check(lambda q, k, v, m: sdpa(q, k, v, attn_mask=m), [(2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 6), (2, 1, 3, 5)])
    # a fully masked row gives zeros (safe softmax)
    m2 = np.zeros((3, 5), bool)
    m2[1] = True
    check(lambda q, k, v: sdpa(q, k, v, attn_mask=lib_of(q).tensor(m2)), [(1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 6)])


def test_sdpa_gradcheck():
    gradcheck_op(lambda q, k, v: RF.scaled_dot_product_attention(q, k, v, is_causal=True), [(1, 3, 2), (1, 3, 2),
                                                                                          (1, 3, 2)])
    gradcheck_op(lambda q, k, v, m: RF.scaled_dot_product_attention(q, k, v, attn_mask=m),
                 [(1, 2, 2), (1, 3, 2), (1, 3, 2), (2, 3)])


def test_sdpa_grad_fn_name():
    q = retrograd.ones(1, 2, 3, 4, requires_grad=True)
    assert type(RF.scaled_dot_product_attention(q, q, q).grad_fn).__name__ == \
        "ScaledDotProductFlashAttentionForCpuBackward0"


def test_sdpa_dropout():
    retrograd.manual_seed(0)
    q = retrograd.from_numpy(np.random.default_rng(0).standard_normal((2, 3, 8, 4))).requires_grad_(True)
    full = RF.scaled_dot_product_attention(q, q, q)
    drop = RF.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    assert not np.allclose(full.detach().numpy(), drop.detach().numpy())
    drop.sum().backward()
    assert q.grad is not None and np.all(np.isfinite(q.grad.numpy()))
    zero = RF.scaled_dot_product_attention(q, q, q, dropout_p=1.0)
    assert not np.any(zero.detach().numpy())


def test_sdpa_errors():
    q = retrograd.zeros(2, 3, 4)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when is_causal=True"):
        RF.scaled_dot_product_attention(q, q, q, attn_mask=retrograd.zeros(3, 3), is_causal=True)
    with pytest.raises(RuntimeError, match="Expected query and key to have the same embedding dimension"):
        RF.scaled_dot_product_attention(q, retrograd.zeros(2, 3, 5), q)


def _mha_call(masks=None, **fkw):
    def call(m, lib, *args):
        kw = {k: lib.tensor(v) for k, v in (masks or {}).items()}
        return m(*(args if len(args) == 3 else args * 3), **kw, **fkw)
    return call


MHA = [(dict(embed_dim=4, num_heads=2), [(3, 2, 4)], {}, None),
       (dict(embed_dim=4, num_heads=2), [(3, 2, 4), (5, 2, 4), (5, 2, 4)], dict(average_attn_weights=False), None),
       (dict(embed_dim=4, num_heads=2, batch_first=True), [(2, 3, 4), (2, 5, 4), (2, 5, 4)], {}, None),
       (dict(embed_dim=6, num_heads=3, kdim=2, vdim=5, bias=False), [(3, 2, 6), (5, 2, 2), (5, 2, 5)], {}, None),
       (dict(embed_dim=4, num_heads=2, add_bias_kv=True, add_zero_attn=True), [(3, 2, 4), (5, 2, 4), (5, 2, 4)], {},
        dict(key_padding_mask=np.array([[0, 0, 0, 1, 1], [0, 0, 0, 0, 1]], bool),
             attn_mask=np.triu(np.ones((3, 5), bool), 1))),
       (dict(embed_dim=4, num_heads=2), [(3, 4), (5, 4), (5, 4)], {},
        dict(attn_mask=np.random.default_rng(0).standard_normal((3, 5)))),
       (dict(embed_dim=4, num_heads=2), [(3, 2, 4)], dict(need_weights=False),
        dict(attn_mask=np.random.default_rng(0).standard_normal((4, 3, 3)))),
       (dict(embed_dim=4, num_heads=1, batch_first=True), [(1, 3, 4)], dict(is_causal=True),
        dict(attn_mask=np.triu(np.ones((3, 3), bool), 1)))]


@needs_torch
@pytest.mark.parametrize("kw,shapes,fkw,masks", MHA)
def test_multihead_attention_parity(kw, shapes, fkw, masks):
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s) for s in shapes]
    m, mt = module_parity(lambda lib: lib.nn.MultiheadAttention(**kw).double(), arrays,
                          call=_mha_call(masks, **fkw))
    assert repr(m) == repr(mt)


@needs_torch
def test_multihead_attention_eval_and_state_dict():
    m = rnn.MultiheadAttention(4, 2, dropout=0.5, add_bias_kv=True)
    mt = torch.nn.MultiheadAttention(4, 2, dropout=0.5, add_bias_kv=True)
    assert list(m.state_dict().keys()) == list(mt.state_dict().keys())
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in mt.named_parameters()]
    m.double().eval()
    mt.double().eval()
    from nn_seq_helpers import copy_params
    copy_params(m, mt)
    x = np.random.default_rng(0).standard_normal((3, 2, 4))
    o, w = m(*[retrograd.from_numpy(x)] * 3)
    ot, wt = mt(*[torch.from_numpy(x)] * 3)
    np.testing.assert_allclose(o.detach().numpy(), ot.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(w.detach().numpy(), wt.detach().numpy(), atol=1e-12)


def test_multihead_attention_init():
    retrograd.manual_seed(0)
    m = rnn.MultiheadAttention(16, 4)
    bound = np.sqrt(6 / (16 + 48))
    assert np.abs(m.in_proj_weight.detach().numpy()).max() <= bound
    assert not np.any(m.in_proj_bias.detach().numpy()) and not np.any(m.out_proj.bias.detach().numpy())


def test_multihead_attention_train_dropout_runs():
    retrograd.manual_seed(0)
    m = rnn.MultiheadAttention(4, 2, dropout=0.5)
    x = retrograd.randn(3, 2, 4, requires_grad=True)
    o, w = m(x, x, x)
    o.sum().backward()
    assert x.grad is not None and m.in_proj_weight.grad is not None


def test_multihead_attention_errors():
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        rnn.MultiheadAttention(5, 2)
    m = rnn.MultiheadAttention(4, 2)
    x = retrograd.zeros(3, 2, 4)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        m(x, x, x, is_causal=True)
    with pytest.raises(AssertionError, match="was expecting embedding dimension of 4, but got 5"):
        m(retrograd.zeros(3, 2, 5), x, x)
    with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask is \(2, 2\), but should be \(3, 3\)."):
        m(x, x, x, attn_mask=retrograd.zeros(2, 2))


@needs_torch
def test_sdpa_double_backward():
    from nn_seq_helpers import double_backward_parity
    double_backward_parity(lambda q: lib_of(q).nn.functional.scaled_dot_product_attention(q, q * 2, q.sin(),
                                                                                          is_causal=True), (2, 3, 4))
    m = np.random.default_rng(1).standard_normal((3, 3))
    double_backward_parity(lambda q: lib_of(q).nn.functional.scaled_dot_product_attention(
        q, q * 2, q, attn_mask=lib_of(q).tensor(m)), (2, 3, 4))


@needs_torch
@pytest.mark.parametrize("average", [True, False])
def test_multihead_attention_double_backward(average):
    from nn_seq_helpers import double_backward_parity, copy_params
    mt = torch.nn.MultiheadAttention(4, 2).double()
    mr = rnn.MultiheadAttention(4, 2).double()
    copy_params(mr, mt)

    def f(x):
        m = mr if isinstance(x, retrograd.Tensor) else mt
        o, w = m(x, x.cos(), x, average_attn_weights=average)
        return o * 1.0 + w.sum()
    double_backward_parity(f, (3, 2, 4))


def test_multihead_attention_mask_type_checks():
    m = rnn.MultiheadAttention(4, 2)
    x = retrograd.zeros(3, 2, 4)
    with pytest.warns(UserWarning, match="Support for mismatched key_padding_mask and attn_mask is deprecated"):
        m(x, x, x, key_padding_mask=retrograd.zeros(2, 3, dtype=retrograd.bool), attn_mask=retrograd.zeros(3, 3))
    with pytest.raises(AssertionError, match="only bool and floating types of key_padding_mask are supported"):
        m(x, x, x, key_padding_mask=retrograd.zeros(2, 3, dtype=retrograd.int64))


@pytest.mark.parametrize("L,S", [(5, 3), (3, 5), (4, 4)])
def test_sdpa_fused_gradcheck(L, S):
    """The fused 4-D path (causal positions selected, softmax row sums from the output) and
    the composite path with dropout (a fixed seed makes the mask repeatable)."""
    gradcheck_op(lambda q, k, v: RF.scaled_dot_product_attention(q, k, v, is_causal=True),
                 [(1, 2, L, 3), (1, 2, S, 3), (1, 2, S, 3)])

    def dropped(q, k, v):
        retrograd.manual_seed(0)
        return RF.scaled_dot_product_attention(q, k, v, dropout_p=0.4)
    gradcheck_op(dropped, [(1, 2, L, 3), (1, 2, S, 3), (1, 2, S, 3)])


@needs_torch
@pytest.mark.parametrize("L,S", [(5, 3), (3, 5)])
def test_sdpa_fused_causal_parity(L, S):
    check(lambda q, k, v: lib_of(q).nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
          [(2, 2, L, 4), (2, 2, S, 4), (2, 2, S, 4)])


@needs_torch
def test_sdpa_fused_output_modified_in_place():
    """The fused kernel keeps its output for the backward, as PyTorch's does: writing to it
    first is the in-place error."""
    msgs = []
    for lib in (retrograd, torch):
        q = lib.ones(2, 2, 4, 3, requires_grad=True)
        o = lib.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
        o.mul_(2)
        with pytest.raises(RuntimeError) as e:
            o.sum().backward()
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


@needs_torch
@pytest.mark.parametrize("batch_first", [False, True])
def test_self_attention_packed_double_backward(batch_first):
    """Self-attention (one tensor as query, key and value) runs on one packed projection."""
    from nn_seq_helpers import double_backward_parity, copy_params
    mt = torch.nn.MultiheadAttention(4, 2, batch_first=batch_first).double()
    mr = rnn.MultiheadAttention(4, 2, batch_first=batch_first).double()
    copy_params(mr, mt)

    def f(x):
        m = mr if isinstance(x, retrograd.Tensor) else mt
        o, w = m(x, x, x)
        return o * 1.0 + w.sum()
    double_backward_parity(f, (3, 2, 4))


def test_self_attention_packed_gradcheck():
    """Packed self-attention with a float mask that requires grad and dropout (a fixed seed
    makes the mask repeatable), against finite differences."""
    retrograd.manual_seed(0)
    m = rnn.MultiheadAttention(4, 2, dropout=0.3).double()
    w0 = m.in_proj_weight

    def f(x, mask, w):
        retrograd.manual_seed(1)
        out, att = RF.multi_head_attention_forward(x, x, x, 4, 2, w, m.in_proj_bias, None, None, False, 0.3,
                                                   m.out_proj.weight, m.out_proj.bias, training=True,
                                                   attn_mask=mask)
        return out, att
    gradcheck_op(f, [(3, 2, 4), (3, 3), tuple(w0.shape)])


@needs_torch
@pytest.mark.parametrize("extra", [{}, dict(add_bias_kv=True, add_zero_attn=True)])
@pytest.mark.parametrize("self_attention", [True, False])
def test_multihead_attention_float_mask_gradient(extra, self_attention):
    """A float attn_mask that requires grad gets PyTorch's gradient (also beside a
    key_padding_mask and the extra key columns of add_bias_kv / add_zero_attn)."""
    from nn_seq_helpers import copy_params
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 2, 4))
    am = rng.standard_normal((3, 3))
    kpm = np.array([[0.0, 0.0, -1.5], [0.0, 0.3, 0.0]])
    mt = torch.nn.MultiheadAttention(4, 2, **extra).double()
    mr = rnn.MultiheadAttention(4, 2, **extra).double()
    copy_params(mr, mt)
    res = []
    for lib, m in ((retrograd, mr), (torch, mt)):
        xt = lib.tensor(x, requires_grad=True)
        mask = lib.tensor(am, requires_grad=True)
        kv = xt if self_attention else xt * 1.0
        o, w = m(xt, kv, kv, attn_mask=mask, key_padding_mask=lib.tensor(kpm))
        (o.sum() + (w * w).sum()).backward()
        res.append((o.detach().numpy(), xt.grad.numpy(), mask.grad.numpy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@needs_torch
@pytest.mark.parametrize("which", [0, 1])
def test_multihead_attention_one_output_used(which):
    """Only the output or only the weights reach the loss (the other output's gradient is
    absent, not zeros)."""
    from nn_seq_helpers import copy_params
    x = np.random.default_rng(2).standard_normal((3, 2, 4))
    mt = torch.nn.MultiheadAttention(4, 2).double()
    mr = rnn.MultiheadAttention(4, 2).double()
    copy_params(mr, mt)
    res = []
    for lib, m in ((retrograd, mr), (torch, mt)):
        xt = lib.tensor(x, requires_grad=True)
        (m(xt, xt, xt)[which] ** 2).sum().backward()
        res.append([xt.grad.numpy()] + [p.grad.numpy() for p in m.parameters() if p.grad is not None])
    assert len(res[0]) == len(res[1])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
