"""Anomaly detection: where each node was made, NaNs caught in backward with the user's line."""
import warnings

import numpy as np
import pytest

import retrograd


def test_nan_in_backward_names_node_and_user_line():
    b = retrograd.tensor([-1.0, 1.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with retrograd.autograd.detect_anomaly():
            y = b.sqrt()  # the line the report must point at
            with pytest.raises(RuntimeError, match=r"Function 'SqrtBackward0' returned nan values in its 0th output."):
                y.sum().backward()
    msgs = [str(x.message) for x in w]
    assert msgs[0].startswith("Anomaly Detection has been enabled.")
    report = [m for m in msgs if m.startswith("Error detected in SqrtBackward0.")]
    assert len(report) == 1
    assert "Traceback of forward call that caused the error:" in report[0]
    assert "y = b.sqrt()  # the line the report must point at" in report[0]
    assert "test_autograd_anomaly.py" in report[0]
    assert "retrograd/ops" not in report[0]          # only the user's frames
    assert b.grad is None


def test_any_backward_error_shows_forward_trace():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with retrograd.autograd.detect_anomaly():
            x = retrograd.tensor([1.0, 2.0], requires_grad=True)
            a = x * 1
            y = a * a  # saved a
            a.mul_(2)
            with pytest.raises(RuntimeError, match="Hint: the backtrace further above shows the operation"):
                y.sum().backward()
    report = [str(m.message) for m in w if str(m.message).startswith("Error detected in MulBackward0")]
    assert report and "y = a * a  # saved a" in report[0]


def test_metadata_holds_traceback_and_mode_restored():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with retrograd.autograd.detect_anomaly():
            assert retrograd.autograd.is_anomaly_enabled()
            y = retrograd.tensor([1.0], requires_grad=True).exp()
    assert not retrograd.autograd.is_anomaly_enabled()
    assert "traceback_" in y.grad_fn.metadata
    z = retrograd.tensor([1.0], requires_grad=True).exp()
    assert z.grad_fn._trace is None             # nothing recorded when off: no per-node cost


def test_set_detect_anomaly_and_check_nan_off():
    with retrograd.autograd.set_detect_anomaly(True, check_nan=False):
        b = retrograd.tensor([-1.0], requires_grad=True)
        b.sqrt().sum().backward()                # NaN gradient, but no check
        assert np.isnan(b.grad.numpy()).all()
    assert not retrograd.autograd.is_anomaly_enabled()


def test_detect_anomaly_as_decorator():
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled."):
        @retrograd.autograd.detect_anomaly()
        def f():
            return retrograd.autograd.is_anomaly_enabled()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert f()
    assert not retrograd.autograd.is_anomaly_enabled()
