"""The dynamic-batching simulator against a published server result: MLPerf Inference v3.0, closed division, NVIDIA
DGX H100 (8 H100 SXM), ResNet-50, Server scenario, predicted from the Offline figure of the same submission.

The method, stated once here and on the page:

1. the shape of the batch curve: the roofline of `resnet50` (224×224, fp16 as the stand-in for an unstated
   precision) on the H100 SXM datasheet, at every batch up to the Server configuration's batch of 256 and at the
   Offline configuration's batch of 2048 (`benchmarks.analysis.roofline.predict`);
2. its level: scaled so that one GPU at the Offline batch delivers an eighth of the published Offline images per
   second (the Offline run is the same hardware and software at its own best batch);
3. the server: Poisson queries of one image (as LoadGen's Server scenario issues them) in one queue, the 7
   inference streams per GPU that the configuration keeps in flight as 7 instances sharing each of the eight GPUs
   (overlapping batches take the curve's time at their summed size, `dynamic_batching`), batches leaving when they
   hold 256 images or when the oldest has waited the configuration's deque timeout of 2 ms (Triton's rule);
4. the prediction: the highest rate whose simulated p99 latency stays within the 15 ms bound, against the
   published Server figure, and the Server/Offline ratio it implies against the published one.

What it leaves out: the host's work per query (LoadGen, copies from host to device, the harness's threads), which
the files read do not state, the spread of real batch times (the curve is a roofline: every batch of a size takes
the same time) and any difference between the curve's shape and TensorRT's.

Pure Python and numpy: nothing on this module's import path may import torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from benchmarks.analysis.published.measurements_file import Measurement, read_published
from benchmarks.analysis.roofline.predict import predict
from benchmarks.analysis.serving.batcher.policy import Capacity, PolicyOutcome, capacity, outcome
from benchmarks.analysis.serving.batcher.simulator import Policy, ServiceCurve
from benchmarks.gpus import find_gpu

SERVER_ID = "mlperf30-dgxh100-resnet50-server"
OFFLINE_ID = "mlperf30-dgxh100-resnet50-offline"
GPU_NAME = "NVIDIA H100 SXM"
DTYPE = "float16"
GPUS = 8
SERVER_BATCH = 256  # gpu_batch_size of H100_SXM_80GBx8, Server
DEQUE_TIMEOUT_S = 0.002  # deque_timeout_usec = 2000
STREAMS = 7  # gpu_inference_streams of H100_SXM_80GBx8, Server: instances sharing each GPU
OFFLINE_BATCH = 2048  # gpu_batch_size of H100_SXM_80GBx1 (and x8), Offline
BOUND_S = 0.015  # target_latency of the Server scenario, at p99
PERCENTILE = 99
REQUESTS = 200_000  # a third of a second of queries at 600,000/s: over 700 batches
CURVE_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, OFFLINE_BATCH)  # up to the streams' summed batch


@dataclass
class MLPerfCheck:
    server: Measurement
    offline: Measurement
    curve: ServiceCurve  # per GPU, scaled to the Offline figure
    scale: float  # published Offline time per batch ÷ roofline time
    predicted: Capacity
    at_published: PolicyOutcome  # the simulation at the published Server rate
    policy: Policy

    @property
    def published_per_s(self) -> float:
        return float(self.server.value)

    @property
    def predicted_per_s(self) -> float:
        return self.predicted.rate_per_s

    @property
    def ratio(self) -> float:
        """Published ÷ predicted Server images per second."""
        return self.published_per_s / self.predicted_per_s

    @property
    def published_share_of_offline(self) -> float:
        return self.published_per_s / float(self.offline.value)

    @property
    def predicted_share_of_offline(self) -> float:
        return self.predicted_per_s / float(self.offline.value)


def scaled_curve(offline_per_s: float) -> tuple[ServiceCurve, float]:
    """The roofline curve of one GPU scaled so that the Offline batch delivers `offline_per_s` ÷ GPUS images per
    second; returns the curve (batches up to the Offline batch, which the streams' summed batches reach) and the
    scale."""
    gpu = find_gpu(GPU_NAME)
    points = predict("resnet50", {"resolution": 224}, gpu.ceilings(DTYPE), DTYPE, CURVE_BATCHES)
    seconds = {p.batch: p.seconds for p in points}
    scale = (OFFLINE_BATCH / (offline_per_s / GPUS)) / seconds[OFFLINE_BATCH]
    curve = ServiceCurve.deterministic(
        {b: seconds[b] * scale for b in CURVE_BATCHES}, "ResNet-50 roofline on an H100 SXM, scaled to MLPerf Offline"
    )
    return curve, scale


def check(rows: list[Measurement] | None = None, *, n: int = REQUESTS, seed: int = 0) -> MLPerfCheck:
    """The prediction of the Server figure from the Offline one (see the module's docstring)."""
    by_id = {row.id: row for row in (rows if rows is not None else read_published())}
    server, offline = by_id[SERVER_ID], by_id[OFFLINE_ID]
    curve, scale = scaled_curve(float(offline.value))
    policy = Policy("triton", SERVER_BATCH, DEQUE_TIMEOUT_S, GPUS * STREAMS, per_device=STREAMS)
    predicted = capacity(policy, curve, BOUND_S, PERCENTILE, n=n, seed=seed)
    at_published = outcome(policy, curve, float(server.value), BOUND_S, PERCENTILE, n=n, seed=seed)
    return MLPerfCheck(server, offline, curve, scale, predicted, at_published, policy)
