"""``hoibench.integrations.torchmetrics.HICOMeanAveragePrecision``: one process and two gloo
processes (DistributedDataParallel's reduction of metric states) give identical per-class APs,
equal to ``hico_mean_ap`` on all the detections."""

from __future__ import annotations

import socket

import numpy as np
import pytest

pytest.importorskip("torchmetrics")
torch = pytest.importorskip("torch")

from hoibench.datasets import load_dataset  # noqa: E402
from hoibench.evaluation import hico_mean_ap  # noqa: E402
from hoibench.formats import predictions_from_qpic  # noqa: E402
from hoibench.integrations.torchmetrics import HICOMeanAveragePrecision  # noqa: E402
from hoibench.testing import noisy_predictions  # noqa: E402
from tests.test_native_predictions import qpic_outputs  # noqa: E402

BATCH = 4


def _ground_truth():
    gt = load_dataset("hico-det:test")
    return gt.subset(np.arange(0, gt.n_images, 60))


def _batches(outputs, names, indices):
    for s in range(0, len(indices), BATCH):
        idx = indices[s:s + BATCH]
        yield ([{k: torch.from_numpy(v) for k, v in outputs[i].items()} for i in idx],
               [{"filename": names[i], "id": i} for i in idx])


def _run(outputs, names, indices, gt, **kw):
    metric = HICOMeanAveragePrecision(gt, **kw)
    for out, tgt in _batches(outputs, names, indices):
        metric.update(out, tgt)
    return metric.compute(), metric


def _worker(rank: int, port: int, gt, outputs, names, out_path: str) -> None:
    """One DDP process (started by the fork server; the data come as arguments): its shard, both settings, rank 0 saves."""
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    try:
        n = len(names)
        # DistributedSampler(shuffle=False): rank r takes r, r + 2, ...; padded by repeating the first
        indices = list(range(rank, n, 2)) + ([0] if n % 2 and rank == 1 else [])
        aps = [_run(outputs, names, indices, gt, known_object=ko)[0]["per_class_ap"].numpy() for ko in (False, True)]
        if rank == 0:
            np.save(out_path, np.stack(aps))
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def batch_data():
    gt = _ground_truth()
    p = noisy_predictions(gt, seed=9, per_image=(30, 60))
    p = p.__class__.from_arrays(p.vocab, p.file_names, np.diff(p.offsets), p.boxes_h.astype(np.float32).astype(float),
                                p.boxes_o.astype(np.float32).astype(float), p.objects, p.verbs,
                                p.scores.astype(np.float32).astype(float))
    return gt, qpic_outputs(p), list(p.file_names)


def test_one_and_two_processes_give_identical_per_class_ap(batch_data, tmp_path):
    gt, outputs, names = batch_data
    assert len(names) % 2  # so that the padding repeat happens
    single = []
    for known_object in (False, True):
        one, metric = _run(outputs, names, list(range(len(names))), gt, known_object=known_object)
        want = hico_mean_ap(predictions_from_qpic(outputs, names), gt, protocol="qpic", known_object=known_object)
        np.testing.assert_array_equal(one["per_class_ap"].numpy(), np.asarray(want.per_class_ap, dtype=float))
        assert float(one["map"]) == want.full > 0 and metric.result is not None
        single.append(one["per_class_ap"].numpy())
    assert not np.array_equal(single[0], single[1], equal_nan=True)

    out_path = str(tmp_path / "ap.npy")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # forkserver, not fork: a child forked after the parent ran OpenMP ops can hang in gloo; the
    # server imports torch and this module once (no OpenMP used there), so children start fast
    ctx = torch.multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["torch", "torch.distributed", __name__])
    procs = [ctx.Process(target=_worker, args=(r, port, gt, outputs, names, out_path)) for r in range(2)]
    for pr in procs:
        pr.start()
    for pr in procs:
        pr.join(timeout=120)
    assert [pr.exitcode for pr in procs] == [0, 0]
    np.testing.assert_array_equal(np.load(out_path), np.stack(single))


def test_unknown_image_and_reset(batch_data):
    from hoibench._exceptions import FormatError

    gt, outputs, names = batch_data
    metric = HICOMeanAveragePrecision(gt)
    with pytest.raises(FormatError, match=r"'nope\.jpg' is not in the ground truth"):
        metric.update([{k: torch.from_numpy(v) for k, v in outputs[0].items()}], [{"filename": "nope.jpg"}])
    out, tgt = next(_batches(outputs, names, [0, 1]))
    metric.update(out, tgt)
    first = metric.compute()["per_class_ap"]
    metric.reset()
    metric.update(out, tgt)
    np.testing.assert_array_equal(metric.compute()["per_class_ap"].numpy(), first.numpy())
