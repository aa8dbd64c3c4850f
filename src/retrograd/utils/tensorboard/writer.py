"""``SummaryWriter``: PyTorch's TensorBoard writer API over tensorboardX's event-file writer."""
import itertools
import os
import sys
import time

import numpy as np

__all__ = ["SummaryWriter"]

_EXTRA_HINT = ("retrograd.utils.tensorboard writes event files with tensorboardX, which is not installed: "
               "install the optional extra with `pip install retrograd[tensorboard]` (or `pip install tensorboardX`)")


def _tbx():
    """tensorboardX, imported on first use. It tries ``import torch`` only to name a type in
    its annotations; that import is kept from loading PyTorch next to retrograd."""
    mod = sys.modules.get("tensorboardX")
    if mod is not None and hasattr(mod, "SummaryWriter"):
        return mod
    blocked = "torch" not in sys.modules
    if blocked:
        sys.modules["torch"] = None          # makes `import torch` raise ImportError
    try:
        import tensorboardX
    except ImportError as e:
        if getattr(e, "name", None) in ("tensorboardX", "google", "google.protobuf") or \
                "tensorboardX" in str(e) or "protobuf" in str(e):
            raise ModuleNotFoundError(_EXTRA_HINT, name="tensorboardX") from e
        raise
    finally:
        if blocked and sys.modules.get("torch", 0) is None:
            del sys.modules["torch"]
    return tensorboardX


def _np(x):
    """A retrograd tensor (or nested list of them) as a NumPy array; other values unchanged."""
    from ..._tensor import Tensor
    if isinstance(x, Tensor):
        a = x.detach().cpu().numpy()
        if a.dtype.kind == "V":                 # bfloat16: TensorBoard takes float32
            a = a.astype(np.float32)
        return a
    if isinstance(x, (list, tuple)) and x and all(isinstance(v, Tensor) for v in x):
        return np.stack([_np(v) for v in x])
    return x


def _scalar(x):
    from ..._tensor import Tensor
    if isinstance(x, Tensor):
        if x.numel() != 1:
            raise ValueError("scalar should be 0D")
        return float(_np(x).reshape(()))
    if isinstance(x, np.ndarray):
        if x.size != 1:
            raise ValueError("scalar should be 0D")
        return float(x.reshape(()))
    return x


_FILE_IDS = itertools.count()


def _unique_suffix(suffix):
    """``.<pid>.<n><suffix>``: event files are named by the second they were opened in, so two
    opened in one second (a writer closed and reopened, two runs in one folder) would otherwise
    overwrite each other; PyTorch's names carry the pid and a counter the same way."""
    return f".{os.getpid()}.{next(_FILE_IDS)}{suffix}"


def _default_logdir(comment=""):
    import socket
    from datetime import datetime
    stamp = datetime.now().strftime("%b%d_%H-%M-%S")
    return os.path.join("runs", stamp + "_" + socket.gethostname() + comment)


class SummaryWriter:
    """Writes scalars, histograms, images, text, hyperparameters and graphs to TensorBoard
    event files in ``log_dir`` (default ``runs/<date>_<host><comment>``), as
    ``torch.utils.tensorboard.SummaryWriter`` does."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120,
                 filename_suffix=""):
        tbx = _tbx()
        if not log_dir:
            log_dir = _default_logdir(comment)
        self.log_dir = os.fspath(log_dir)
        self.purge_step = purge_step
        self.max_queue, self.flush_secs, self.filename_suffix = max_queue, flush_secs, filename_suffix
        self._tbx = tbx.SummaryWriter(logdir=self.log_dir, purge_step=purge_step, max_queue=max_queue,
                                      flush_secs=flush_secs, filename_suffix=_unique_suffix(filename_suffix))

    @property
    def _w(self):
        w = self._tbx
        if w.all_writers is None or w.file_writer is None:
            w._filename_suffix = _unique_suffix(self.filename_suffix)    # reopened after close: a new file
        return w

    # --- the writer ----------------------------------------------------------------------
    def get_logdir(self):
        """The directory event files are written to."""
        return self.log_dir

    def _get_file_writer(self):
        return self._w._get_file_writer()

    @property
    def file_writer(self):
        return self._get_file_writer()

    @property
    def all_writers(self):
        return self._w.all_writers

    def flush(self):
        """Write pending events to disk (every event added so far is in the files on return)."""
        for fw in (self._tbx.all_writers or {}).values():
            _drain(fw)
        self._tbx.flush()

    def close(self):
        """Flush and close every event file of this writer (a later add opens a new file)."""
        self._tbx.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # --- summaries -----------------------------------------------------------------------
    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        """Log one number under ``tag`` at ``global_step``."""
        v = _scalar(scalar_value)
        if isinstance(v, str):
            raise TypeError(f"add_scalar expects a number, not a string ({v[:40]!r})")
        if not new_style:
            self._w.add_scalar(tag, v, global_step, walltime)
            return
        tbx = _tbx()
        from tensorboardX.proto.summary_pb2 import Summary, SummaryMetadata
        from tensorboardX.proto.tensor_pb2 import TensorProto
        from tensorboardX.proto.tensor_shape_pb2 import TensorShapeProto
        if double_precision:
            tp = TensorProto(dtype="DT_DOUBLE", double_val=[float(v)], tensor_shape=TensorShapeProto())
        else:
            tp = TensorProto(dtype="DT_FLOAT", float_val=[float(v)], tensor_shape=TensorShapeProto())
        md = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
        s = Summary(value=[Summary.Value(tag=tbx.summary._clean_tag(tag), tensor=tp, metadata=md)])
        self._get_file_writer().add_summary(s, global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Log several numbers on one chart: each key goes to its own run ``<log_dir>/<main_tag>_<key>``."""
        tbx = _tbx()
        walltime = time.time() if walltime is None else walltime
        for tag, v in tag_scalar_dict.items():
            path = os.path.join(self.log_dir, main_tag.replace("/", "_") + "_" + tag)
            w = self._w
            w._get_file_writer()              # reopens the writer's files after a close
            fw = w.all_writers.get(path)
            if fw is None:
                fw = w.all_writers[path] = tbx.writer.FileWriter(
                    path, max_queue=self.max_queue, flush_secs=self.flush_secs,
                    filename_suffix=_unique_suffix(self.filename_suffix))
            fw.add_summary(tbx.summary.scalar(main_tag, _scalar(v)), global_step, walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None, max_bins=None):
        """Log the distribution of ``values`` (``bins``: 'tensorflow', a NumPy bins spec)."""
        self._w.add_histogram(tag, np.asarray(_np(values)), global_step, bins, walltime, max_bins)

    def add_histogram_raw(self, tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts,
                          global_step=None, walltime=None):
        """Log a histogram given its buckets."""
        self._w.add_histogram_raw(tag, _scalar(min), _scalar(max), _scalar(num), _scalar(sum),
                                  _scalar(sum_squares), _np(bucket_limits), _np(bucket_counts), global_step, walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        """Log one image: float values in [0, 1] or uint8 in [0, 255]; ``dataformats``
        CHW (default), HWC or HW."""
        self._w.add_image(tag, np.asarray(_np(img_tensor)), global_step, walltime, dataformats)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"):
        """Log a batch of images as one grid (``dataformats`` NCHW by default, or NHWC)."""
        self._w.add_images(tag, np.asarray(_np(img_tensor)), global_step, walltime, dataformats)

    def add_image_with_boxes(self, tag, img_tensor, box_tensor, global_step=None, walltime=None,
                             rescale=1, dataformats="CHW", labels=None):
        """Log an image with boxes (N x 4: xmin, ymin, xmax, ymax) drawn on it."""
        self._w.add_image_with_boxes(tag, np.asarray(_np(img_tensor)), np.asarray(_np(box_tensor)), global_step,
                                     walltime, dataformats=dataformats, labels=labels, rescale=rescale)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None):
        """Log a matplotlib figure (or a list of them) as an image."""
        self._w.add_figure(tag, figure, global_step, close, walltime)

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        """Log a text (TensorBoard renders it as Markdown)."""
        self._w.add_text(tag, text_string, global_step, walltime)

    def add_video(self, tag, vid_tensor, global_step=None, fps=4, walltime=None):
        self._w.add_video(tag, np.asarray(_np(vid_tensor)), global_step, fps, walltime)

    def add_audio(self, tag, snd_tensor, global_step=None, sample_rate=44100, walltime=None):
        self._w.add_audio(tag, np.asarray(_np(snd_tensor)), global_step, sample_rate, walltime)

    def add_pr_curve(self, tag, labels, predictions, global_step=None, num_thresholds=127, weights=None,
                     walltime=None):
        self._w.add_pr_curve(tag, np.asarray(_np(labels)), np.asarray(_np(predictions)), global_step,
                             num_thresholds, _np(weights), walltime)

    def add_embedding(self, mat, metadata=None, label_img=None, global_step=None, tag="default",
                      metadata_header=None):
        self._w.add_embedding(np.asarray(_np(mat)), metadata, _np(label_img), global_step, tag, metadata_header)

    def add_mesh(self, tag, vertices, colors=None, faces=None, config_dict=None, global_step=None, walltime=None):
        self._w.add_mesh(tag, _np(vertices), _np(colors), _np(faces), config_dict, global_step, walltime)

    def add_custom_scalars(self, layout):
        self._w.add_custom_scalars(layout)

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None, global_step=None):
        """Log one run's hyperparameters and final metrics for TensorBoard's HParams tab, in
        the run ``<log_dir>/<run_name>`` (default: the current time)."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        tbx = _tbx()
        hp = {k: (_scalar(v) if not isinstance(v, (bool, str)) and v is not None else v) for k, v in hparam_dict.items()}
        exp, ssi, sei = tbx.summary.hparams(hp, {k: _scalar(v) for k, v in metric_dict.items()})
        if hparam_domain_discrete:
            exp = _with_discrete_domains(exp, hparam_dict, hparam_domain_discrete)
        logdir = os.path.join(self.log_dir, run_name if run_name else str(time.time()))
        with SummaryWriter(log_dir=logdir) as w:
            fw = w._get_file_writer()
            for s in (exp, ssi, sei):
                fw.add_summary(s, global_step)
            for k, v in metric_dict.items():
                w.add_scalar(k, v, global_step)

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        """Run ``model(*input_to_model)`` once, record retrograd's graph of that forward pass
        and write it as a TensorBoard graph (nodes grouped by the module that made them)."""
        from ._graph import graph_def
        gd = graph_def(model, input_to_model, verbose=verbose)
        from tensorboardX.proto.event_pb2 import Event
        self._get_file_writer().add_event(Event(graph_def=gd.SerializeToString()))

    def __repr__(self):
        return f"SummaryWriter(log_dir={self.log_dir!r})"


def _drain(fw):
    """Wait until tensorboardX's writer thread has written every queued event of ``fw``.
    Its own flush only flushes the file, while events may still sit in its queue; the
    thread is stopped (its stop signal queues behind the events) and started afresh."""
    ev = getattr(fw, "event_writer", None)
    worker = getattr(ev, "_worker", None)
    if ev is None or getattr(ev, "_closed", True) or worker is None or not hasattr(worker, "stop"):
        return
    worker.stop()
    ev._worker = type(worker)(ev._event_queue, ev._ev_writer, ev._flush_secs)
    ev._worker.start()


def _with_discrete_domains(exp, hparam_dict, domains):
    """The hparams experiment summary with each named hparam's domain set to its listed values."""
    from tensorboardX.proto.plugin_hparams_pb2 import HParamsPluginData
    if not isinstance(domains, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing else")
    for k, v in domains.items():
        if k not in hparam_dict:
            raise ValueError(f"parameter: hparam_domain_discrete[{k}] is not in hparam_dict")
        if not isinstance(v, list) or not all(isinstance(d, type(hparam_dict[k])) for d in v):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same type as "
                            f"hparam_dict[{k}].")
    val = exp.value[0]
    data = HParamsPluginData.FromString(val.metadata.plugin_data.content)
    for info in data.experiment.hparam_infos:
        if info.name in domains:
            for d in domains[info.name]:
                lv = info.domain_discrete.values.add()
                if isinstance(d, bool):
                    lv.bool_value = d
                elif isinstance(d, str):
                    lv.string_value = d
                else:
                    lv.number_value = float(d)
    val.metadata.plugin_data.content = data.SerializeToString()
    return exp
