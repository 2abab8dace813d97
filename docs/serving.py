# %% [markdown]
# # Serving with dynamic batching
#
# ## The answer
#
# The settings for the page's worked example at three loads: what max batch, max delay and how many instances keep
# the 99th percentile of latency within the budget, and what it then is. How they follow, and what every number
# rests on, is below.

# %% tags=["hide-input"]
from benchmarks.site.pages import serving

page = serving.build()
page.show("answer")

# %% [markdown]
# ## The question
#
# The rest of this site answers "how long does one call take at batch *b*". A server answers a
# different question: requests arrive at random, λ a second, and the 99th percentile of latency must
# stay under a budget, so what max batch, what max queue delay and how many model instances? Those are
# Triton's `max_batch_size` and `max_queue_delay_microseconds`, TorchServe's `batch_size` and
# `max_batch_delay`, and Ray Serve's `max_batch_size` and `batch_wait_timeout_s`. This page answers
# it from a measured batch curve, by simulating the server (the section below the example says which
# numbers were measured and which simulated).
#
# ## The simulation
#
# The simulator draws the arrivals, forms batches by each server's own rule, and serves every batch
# for a time drawn from the measured curve; queueing theory checks it where it is exact.
#
# <details class="note"><summary>How it works: the arrivals, each server's batching rule, the service,
# the outputs and the checks against queueing theory</summary>
#
# - **Arrivals**: open-loop Poisson (independent users), bursty (gaps drawn from a gamma
#   distribution with a coefficient of variation above 1), a recorded trace of timestamps, or a
#   closed loop of N clients that each wait for their answer before sending again, which is what
#   load-testing tools do and which never lets a queue build past N.
# - **The batcher** follows each server's own rule, because the rules differ:
#     - *Triton* sends a batch when the queue holds the max batch, or when the *oldest* request has
#       waited the max queue delay, and only to a free instance. A request that waited for an
#       instance has already used up its delay, so under load batches leave at once.
#     - *TorchServe*: a free worker takes the first request, then collects until `batch_size` or
#       until `max_batch_delay` has passed since it took the first.
#     - *Ray Serve* (`@serve.batch`) also starts its wait when it takes a batch's first request,
#       and what happens next depends on the handler. One that **awaits** (an `async` handler doing
#       asynchronous work) leaves the batcher free, so it closes a batch one wait after its first
#       request even while the previous batch still runs: batches stay small, about
#       1 + λ × wait, and queue for the replica. One that **blocks** the event loop, as a
#       synchronous PyTorch forward pass does, stops the batcher until the call returns, so the
#       next batch fills meanwhile and grows with the load. Both are common in practice.
#     - *No batching*: one request per call.
# - **Service**: each batch runs on one of *k* identical instances for a time drawn from the
#   measured samples of that batch size, interpolated between measured sizes; the spread is the
#   measured one, not a constant. A fixed per-request overhead of the server can be added.
# - **Outputs**: latency percentiles split into queueing (waiting for a batcher or an instance),
#   batch formation (sitting in a batch that is still filling) and service; throughput; the batch
#   sizes formed; utilisation; and a verdict of *overloaded* when the backlog grows for as long as
#   the run lasts, in which case no percentile is given, since it would only measure the length of
#   the run.
#
# Where queueing theory is exact, the simulator is checked against it by the tests: the mean wait
# of M/M/1, M/D/1 and M/M/2 queues, and of a bulk-service queue whose server takes up to *K*
# waiting requests at once; and two properties: without a max delay, p99 never falls as the rate
# rises, and a longer max delay never lowers the mean batch. With a long max delay p99 *can* fall
# as the rate rises, because a busier stream fills the batch before the delay runs out.
#
# </details>

# %% tags=["hide-input"]
page.show("example")

# %% [markdown]
# ## Why the batch formed is smaller than the max
#
# A max batch is a ceiling, not a target. Below it, the batch holds whatever arrived while the
# batcher waited: at a low rate that is the requests within one max delay, usually one or two;
# only when batches start to queue behind a busy instance does the batch grow toward the max. The
# table under the chart sets Ray Serve's two handler styles side by side on the same curve and the
# same settings.

# %% tags=["hide-input"]
page.show("batch_formed")

# %% [markdown]
# An awaiting handler keeps its batches near 1 + λ × wait whatever the load, so each call carries
# the fixed cost of a small batch and the replica saturates early; a blocking handler lets the
# batch grow with the backlog and sustains much more. If your batches look smaller than you set,
# check which of the two your handler is before you raise the max batch.
#
# ## What the latency is made of
#
# Each request's latency splits into the time it waited for an instance (or for the batcher),
# the time it sat in a batch that was still filling, and the batch's own run; which of them is the
# larger depends on the percentile and the load, as the paragraph under the chart reads it.

# %% tags=["hide-input"]
page.show("breakdown")

# %% [markdown]
# ## Latency against throughput: the hockey stick
#
# Each policy's p99 against the throughput it serves, up to where it overloads; the paragraph under
# the chart says how each one rises and what batching does to the highest rate within the budget.

# %% tags=["hide-input"]
page.show("hockey")

# %% [markdown]
# Load-testing tools usually run N concurrent clients, each sending its next request when the
# previous answer is back. Such a closed loop can never queue more than N requests, so it finds a
# throughput and a latency that open-loop users arriving at random, at the same average rate, do
# not get: the table sets the two side by side.

# %% tags=["hide-input"]
page.show("closed_loop")

# %% [markdown]
# ## Capacity within a budget
#
# For a budget at a percentile, the number that matters is the highest rate a policy sustains
# within it: its capacity. Each committed sweep (see [Your model](../your_model/)) is served here
# at its own budget and percentile, one instance, with max batches at the powers of two up to 64 and
# at its largest measured batch (256 at most), under Triton's rule with no max delay and with a
# short one.

# %% tags=["hide-input"]
page.show("capacity")

# %% [markdown]
# ## What the serve command recommends
#
# `python -m benchmarks serve` runs this search for you: every max batch (powers of two up to the
# curve's largest), every max delay shorter than the budget and, with `--instances N`, up to *N*
# instances. It keeps the policies within the budget at every rate asked for, takes the fewest
# instances, then the most capacity, and explains the answer in one paragraph:

# %% tags=["hide-input"]
page.show("recommend")

# %% [markdown]
# ## Checked against a real server
#
# A simulator is only as good as its rules, so this one is checked against a real dynamic-batching
# server run on this project's own machine: Ray Serve's `@serve.batch`, driven by Poisson clients,
# and the simulator given only what that server measured.
#
# <details class="note"><summary>How the check runs</summary>
#
# Ray Serve is deployed as its users deploy it, one replica per policy, with `max_ongoing_requests`
# set explicitly. Each policy runs
# with both handler styles: one whose batch handler awaits, one that blocks the event loop as a
# synchronous forward pass does. The service sleeps along a committed sweep's measured curve, so
# the server's own CPU cost per request does not mix with the model's, and a real torch model runs
# at low rates. An open-loop Poisson client on 127.0.0.1 drives every case at several rates, three
# times. The simulator then gets only what was measured: the server's own cost per request
# (through a replica that does no work), the batch times the server measured inside itself, and
# each repeat's arrival times. Measured and simulated p50, mean batch and batch sizes are set side
# by side; p99 is shown but not judged, for the reason the summary gives. `nox -s serving-check`
# repeats the check on your machine.
#
# </details>

# %% tags=["hide-input"]
page.show("real_server")

# %% [markdown]
# ## Checked against MLPerf
#
# MLPerf Inference's Server scenario is a dynamic-batching server under Poisson queries with a
# p99 bound, and its Offline scenario runs the same system flat out, so one submission gives both
# sides. NVIDIA's v3.0 closed submission for a DGX H100 (eight H100 SXM) ran ResNet-50 with the
# settings its configuration file gives (quoted in `benchmarks/published/measurements.json`, with
# the figures, on [Against published results](../published/)): batches of up to 256 and a 2 ms
# deque timeout in the Server scenario. The check simulates that server on a roofline curve scaled
# to the published Offline figure and compares the rate it sustains within the bound with the
# published Server figure.
#
# <details class="note"><summary>The check step by step, and what it leaves out</summary>
#
# The check:
#
# 1. takes the shape of the batch curve from the roofline of ResNet-50 on the H100 SXM datasheet
#    (in a stand-in precision, named under the chart);
# 2. scales it so that one GPU at the Offline batch of 2,048 delivers an eighth of the published
#    Offline figure;
# 3. serves Poisson queries on the seven inference streams the configuration keeps in flight on
#    each of the eight GPUs (seven instances sharing a GPU: batches that overlap take the curve's
#    time at their summed size), batches leaving at 256 or when the oldest query has waited 2 ms;
# 4. finds the highest rate whose simulated p99 stays within the 15 ms bound, and the
#    Server/Offline ratio it implies.
#
# It leaves out the host's work per query (LoadGen, copies to the device, the harness's
# threads), which the files read do not state, the spread of real batch times (a roofline curve
# gives every batch of one size the same time) and any difference between the curve's shape and
# TensorRT's.
#
# </details>

# %% tags=["hide-input"]
page.show("mlperf")

# %% [markdown]
# ## Run it on your own sweep
#
# Sweep your model ([Your model](../your_model/)), then plan its server from the sweep file, from
# one curve of a profile run, from a CSV of batch times measured anywhere (perf_analyzer, your
# own harness: `batch,ms` and optionally `p90_ms,p99_ms`), or from a roofline on any datasheet GPU:
#
# ```sh
# python -m benchmarks serve benchmarks/sweeps/DEVICE/SWEEP.json --rate 20,60 --budget-ms 100
# python -m benchmarks serve RUN.json:mlp --param width=1024 --rate 500 --budget-ms 20 --server torchserve
# python -m benchmarks serve curve.csv --rate 400,800 --policy 16/5/2 --budget-ms 50
# python -m benchmarks serve resnet50 --gpu L4 --dtype fp16 --rate 2000 --budget-ms 15 --instances-per-gpu 2
# python -m benchmarks serve SWEEP.json --rate 30 --budget-ms 200 --server ray --handler awaiting --arrivals gamma:2
# ```
#
# <details class="note"><summary>Devices against instances on one device, your own policy, the host's
# cost per request and recorded traces</summary>
#
# Devices and instances are told apart. `--gpus N` are separate devices, one model instance
# each, and N of them serve N times what one does. `--instances-per-gpu K` is Triton's
# `instance_group { count: K }`: K copies on one device, whose batches overlap but share its
# FLOP/s and bandwidth, so batches that run at the same time take at least the curve's time at
# their summed size. Copies help where the curve is flat (the device idles between launches) and
# not where time grows in proportion to the batch.
#
# `--policy MAX_BATCH/DELAY_MS[/DEVICES]` evaluates the settings a server runs now at every rate
# instead of searching (exit status 3 when they miss the budget; so does a search that finds no
# policy, printing the closest). `--overhead-ms` adds your server's cost per request: a fixed
# delay, or with `--host-cores N` CPU work on N cores, half before the batcher and half after the
# batch, each waiting for a free core, so it grows with the rate and caps it at N ÷ overhead.
# `--arrivals trace:FILE` replays your own timestamps (one time in seconds per line, or a JSON
# array), scaled to `--rate` or at their own rate; `--json` prints the plan as one object;
# `--help` lists the rest. A bad argument is refused in one line.
#
# </details>

# %% tags=["hide-input"]
page.show_takeaway()
