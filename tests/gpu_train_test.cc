// Training on GPUs. Suites named Gpu* need a CUDA GPU (ctest label "gpu") and skip, saying why,
// where there is none; scripts/gpu-check.sh runs them on a GPU machine. The TrainDevice* suites
// run everywhere: the device-independent pieces of the GPU path (the tensor form of the
// optimizer, the per-epoch index upload) and what `run`/`sweep --device` do without a GPU.
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "comm/cuda/devices.h"
#include "comm/cuda/gpu_trace.h"
#include "common/error.h"
#include "record/trace_file.h"
#include "tests/cli_util.h"
#include "tests/gpu_util.h"
#include "tests/train_util.h"
#include "workload/sampler.h"
#include "workload/train.h"

namespace tpb {
namespace {

using nlohmann::json;
using test::maxRelDiff;
using test::runCli;
using test::smallTrainConfig;
using test::trainAll;


// ---- everywhere --------------------------------------------------------------------------------

// The GPU runs FlatSgd as tensor operations; on the CPU both forms can be compared directly.
TEST(TrainDevice, FlatSgdTensorOpsMatchTheLoop) {
  for (double momentum : {0.0, 0.9}) {
    SCOPED_TRACE("momentum " + std::to_string(momentum));
    torch::manual_seed(3);
    const auto w0 = torch::randn({1000003});
    torch::Tensor wLoop = w0.clone(), wOps = w0.clone();
    FlatSgd loop(0.05, momentum, wLoop, FlatSgd::Impl::Loop);
    FlatSgd ops(0.05, momentum, wOps, FlatSgd::Impl::TensorOps);
    for (int step = 0; step < 3; ++step) {
      const auto g = torch::randn({1000003});
      loop.step(wLoop, g);
      ops.step(wOps, g);
    }
    EXPECT_GT((wLoop - w0).abs().max().item<float>(), 0.1f) << "the loop did not move the weights";
    EXPECT_LE((wLoop - wOps).abs().max().item<float>(), 1e-6f);
  }
}

TEST(TrainDevice, FlatSgdRefusesMismatchedBuffers) {
  auto w = torch::zeros({10});
  FlatSgd sgd(0.1, 0.0, w);
  EXPECT_THROW(sgd.step(w, torch::zeros({9})), Error);
}

TEST(TrainDevice, EpochIndexTensorIsACheckedCopyOfTheOrder) {
  std::vector<std::int64_t> order = {3, 0, 2, 1};
  const auto t = epochIndexTensor(order, 4, torch::Device(torch::kCPU));
  order[0] = 9;  // the tensor must not alias the vector, which the sampler reuses
  ASSERT_EQ(t.numel(), 4);
  EXPECT_EQ(t[0].item<std::int64_t>(), 3);
  EXPECT_EQ(t[3].item<std::int64_t>(), 1);
  EXPECT_THROW(epochIndexTensor({0, 4}, 4, torch::Device(torch::kCPU)), Error);
  EXPECT_THROW(epochIndexTensor({-1}, 4, torch::Device(torch::kCPU)), Error);
}

bool gpuUsable() { return ncclCompiled() && visibleCudaDevices() > 0; }

TEST(TrainDeviceCli, CudaWithoutAGpuIsOneUsageErrorBeforeLaunch) {
  if (gpuUsable()) GTEST_SKIP() << "a GPU is visible here";
  for (const char* cmd : {"run", "sweep"}) {
    SCOPED_TRACE(cmd);
    const std::vector<std::string> args =
        std::string(cmd) == "run"
            ? std::vector<std::string>{"run", "--device", "cuda", "--strategy", "single", "--n_gpus", "1",
                                       "--epochs", "1"}
            : std::vector<std::string>{"sweep", "--device", "cuda", "--strategies", "all", "--n_gpus", "1,2",
                                       "--epochs", "1", "--out", test::tempPath("never.json")};
    test::expectRefusedUpFront(runCli(args), "--device");
  }
}

TEST(TrainDeviceCli, AutoWithoutAGpuTrainsOnCpuAndRecordsCpu) {
  if (gpuUsable()) GTEST_SKIP() << "a GPU is visible: auto picks cuda";
  const std::string out = test::tempPath("auto-train.json");
  const auto r = runCli({"sweep", "--device", "auto", "--strategies", "single,ring_all_reduce", "--n_gpus",
                         "1,2", "--batch_size", "32", "--epochs", "1", "--train_size", "512", "--test_size",
                         "200", "--out", out});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const json runs = test::readJson(out).at("runs");
  ASSERT_EQ(runs.size(), 4u);  // single at N=2 is recorded as skipped
  int ok = 0;
  for (const auto& run : runs) {
    SCOPED_TRACE(run.dump());
    EXPECT_EQ(run.at("config").at("device"), "cpu");  // resolved, never "auto"
    ok += run.at("status") == "ok";
  }
  EXPECT_EQ(ok, 3);
  std::remove(out.c_str());
}

TEST(TrainDeviceCli, TransportThatCannotRunOnTheDeviceIsAUsageError) {
  if (!ncclCompiled()) GTEST_SKIP() << "built without NCCL: no nccl transport to refuse";
  const auto r = runCli({"run", "--device", "cpu", "--transport", "nccl", "--strategy", "ring_all_reduce",
                         "--n_gpus", "2", "--epochs", "1"});
  test::expectRefusedUpFront(r, "--transport");
}

// ---- on GPUs -----------------------------------------------------------------------------------

// The same 6 steps on cuda:0 and on the CPU: different summation orders inside the matrix
// products, so close rather than equal (PyTorch does not use TF32 for float32 matmuls unless
// told to).
TEST(GpuTrain, SingleOnCudaMatchesSingleOnCpu) {
  TPB_REQUIRE_GPU(true);
  at::set_num_threads(1);
  const auto cpu = trainAll(smallTrainConfig("single", 1, 32));
  const auto gpu = trainAll(smallTrainConfig("single", 1, 32, Device::Cuda));
  TrainConfig still = smallTrainConfig("single", 1, 32);
  still.maxSteps = 0;
  ASSERT_GT(maxRelDiff(cpu[0], trainAll(still)[0]), 1e-3) << "the reference did not move";
  EXPECT_LE(maxRelDiff(gpu[0], cpu[0]), 1e-3);
}

// Every strategy on `n` GPUs ends where single on cuda:0 ends at the global batch, on every rank.
void checkStrategiesOnGpus(int n) {
  const int batch = 16;
  for (const auto& strategy : test::synchronisingStrategies()) {
    SCOPED_TRACE(strategy + " N=" + std::to_string(n));
    if (!findStrategy("--strategy", strategy).unsupported(Device::Cuda, n).empty()) continue;  // e.g. no torch
    const auto ref = trainAll(test::referenceConfigFor(strategy, n, batch, Device::Cuda));
    const auto got = trainAll(smallTrainConfig(strategy, n, batch, Device::Cuda));
    for (std::size_t r = 0; r < got.size(); ++r) EXPECT_LE(maxRelDiff(got[r], ref[0]), 1e-4) << "rank " << r;
  }
}

TEST(GpuTrain, EveryStrategyOnOneGpuMatchesSingle) {
  TPB_REQUIRE_GPU(true);
  checkStrategiesOnGpus(1);
}

TEST(GpuTrain, EveryStrategyOnTwoGpusMatchesSingleAtTheGlobalBatch) {
  TPB_REQUIRE_GPUS(2);
  checkStrategiesOnGpus(2);
}

// A wrong global batch must be told apart on the GPU too, or the checks above prove nothing.
TEST(GpuTrain, DifferentGlobalBatchIsDetected) {
  TPB_REQUIRE_GPU(true);
  const auto a = trainAll(smallTrainConfig("single", 1, 16, Device::Cuda));
  const auto b = trainAll(smallTrainConfig("single", 1, 32, Device::Cuda));
  EXPECT_GT(maxRelDiff(a[0], b[0]), 1e-3);
}

// As a user runs it: every strategy through `tpbench sweep --device cuda` on the GPUs there are
// (at most 2), recorded as cuda over nccl, learning the synthetic task.
TEST(GpuTrainCli, EveryStrategyTrainsOnCuda) {
  TPB_REQUIRE_GPU(true);
  const int n = std::min(visibleCudaDevices(), 2);
  const std::string out = test::tempPath("gpu-train.json");
  const auto r = runCli({"sweep", "--device", "cuda", "--strategies", "all", "--n_gpus", std::to_string(n),
                         "--batch_size", "64", "--epochs", "2", "--train_size", "8192", "--test_size", "2000",
                         "--out", out});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const json doc = test::readJson(out);
  int ok = 0, runnable = 0;
  for (const auto& s : trainStrategies()) runnable += s.unsupported(Device::Cuda, n).empty();
  for (const auto& run : doc.at("runs")) {
    SCOPED_TRACE(run.dump());
    EXPECT_EQ(run.at("config").at("device"), "cuda");
    if (run.at("status") == "skipped") {
      // single at n = 2; the PyTorch references where the GPU machine's Python lacks torch.
      EXPECT_FALSE(findStrategy("--strategy", run.at("config").at("strategy").get<std::string>()).unsupported(Device::Cuda, n).empty());
      continue;
    }
    ASSERT_EQ(run.at("status"), "ok");
    ++ok;
    EXPECT_EQ(run.at("config").at("transport"), "nccl");
    EXPECT_GE(run.at("summary").at("final_test_accuracy").get<double>(), 0.85);
    EXPECT_LT(run.at("epochs")[1].at("train_loss").get<double>(), run.at("epochs")[0].at("train_loss").get<double>());
  }
  EXPECT_EQ(ok, runnable);
  EXPECT_EQ(doc.at("meta").at("gpus").size(), static_cast<std::size_t>(visibleCudaDevices()));
  std::remove(out.c_str());
}

// --trace on CUDA: LibTorch's stream and the nccl transport's stream are tracks of their own,
// timed with CUDA events and rebased onto the host clock (comm/cuda/gpu_trace.h).
struct TracedSpan {
  std::string name;
  double b, e;  // µs
};
using SpansByTid = std::map<int, std::vector<TracedSpan>>;

// A traced ddp run on `n` GPUs: 0.5 MiB buckets cut the 2.7 MB model into several.
struct TracedDdp {
  int n = 1, trainSize = 512, batch = 64;
  int steps() const { return trainSize / (n * batch); }  // per rank: the sizes divide exactly
};

SpansByTid runTracedDdp(const TracedDdp& run) {
  const std::string tr = test::tempPath("gpu.trace.json"), out = test::tempPath("gpu-trace.json");
  const auto r = runCli({"run", "--device", "cuda", "--strategy", "ddp", "--n_gpus", std::to_string(run.n),
                         "--batch_size", std::to_string(run.batch), "--epochs", "1", "--train_size",
                         std::to_string(run.trainSize), "--test_size", "200", "--bucket_mb", "0.5", "--out", out,
                         "--trace", tr});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  SpansByTid byTid;
  if (r.exitCode != 0) return byTid;
  const json trace = test::readJson(tr);  // held: a range-for over a member of a temporary would dangle
  for (const json& e : trace.at("traceEvents"))
    if (e.at("ph") == "X")
      byTid[e.at("tid").get<int>()].push_back(
          {e.at("name"), e.at("ts").get<double>(), e.at("ts").get<double>() + e.at("dur").get<double>()});
  std::remove(tr.c_str());
  std::remove(out.c_str());
  return byTid;
}

// The spans of one name on one track, by start time.
std::vector<TracedSpan> named(const SpansByTid& byTid, int tid, const std::string& name) {
  std::vector<TracedSpan> out;
  if (const auto it = byTid.find(tid); it != byTid.end())
    for (const TracedSpan& s : it->second)
      if (s.name == name) out.push_back(s);
  std::sort(out.begin(), out.end(), [](const TracedSpan& a, const TracedSpan& b) { return a.b < b.b; });
  return out;
}

// Every step of `rank` has its forward, backward and optimizer on the GPU track, and a kernel
// cannot run before the host launched it (50 µs for the anchor's error); a step's backward runs
// after its forward.
void expectStepsOnTheGpuTrack(const SpansByTid& byTid, int rank, int steps) {
  const int host = traceTid(rank, 0), gpu = traceTid(rank, 2);
  const auto hostFwd = named(byTid, host, "forward"), gpuFwd = named(byTid, gpu, "forward"),
             gpuBwd = named(byTid, gpu, "backward");
  const auto want = static_cast<std::size_t>(steps);
  ASSERT_EQ(hostFwd.size(), want);
  ASSERT_EQ(gpuFwd.size(), want);
  ASSERT_EQ(gpuBwd.size(), want);
  EXPECT_EQ(named(byTid, gpu, "optimizer").size(), want);
  for (std::size_t i = 0; i < want; ++i) {
    SCOPED_TRACE("step " + std::to_string(i));
    EXPECT_GE(gpuFwd[i].b, hostFwd[i].b - 50.0);
    EXPECT_LE(gpuFwd[i].e, gpuBwd[i].b + 1.0);
    EXPECT_GT(gpuBwd[i].e, gpuBwd[i].b);
  }
}

// One GPU: ddp exchanges nothing, so neither comm track has a span.
TEST(GpuTraceCli, KernelsAreTimedOnLibTorchsStreamAndOneGpuLaunchesNoComm) {
  TPB_REQUIRE_GPU(true);
  const TracedDdp run;
  const SpansByTid byTid = runTracedDdp(run);
  ASSERT_FALSE(byTid.empty());
  expectStepsOnTheGpuTrack(byTid, 0, run.steps());
  for (const int track : {1, 3}) EXPECT_EQ(byTid.count(traceTid(0, track)), 0u) << "track " << track;
}

// Two GPUs: every bucket allreduce, launched from a backward hook on LibTorch's autograd thread,
// is also drawn on the nccl stream's track, where it runs after the hook launched it and ends
// before its step's optimizer (which the host queues only after waiting for every bucket).
TEST(GpuTraceCli, BucketsAreTimedOnTheNcclStream) {
  TPB_REQUIRE_GPUS(2);
  TracedDdp run;
  run.n = 2;
  const SpansByTid byTid = runTracedDdp(run);
  ASSERT_FALSE(byTid.empty());
  const auto steps = static_cast<std::size_t>(run.steps());
  for (int rank = 0; rank < run.n; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    expectStepsOnTheGpuTrack(byTid, rank, run.steps());
    const auto launched = named(byTid, traceTid(rank, 1), "bucket allreduce");  // the host's record
    const auto onGpu = named(byTid, traceTid(rank, 3), "ddp bucket allreduce (ncclAllReduce)");
    const auto optimizer = named(byTid, traceTid(rank, 2), "optimizer");
    ASSERT_EQ(launched.size() % steps, 0u);
    const std::size_t buckets = launched.size() / steps;
    EXPECT_GE(buckets, 2u) << "0.5 MiB buckets of a 2.7 MB model";
    ASSERT_EQ(onGpu.size(), launched.size());
    ASSERT_EQ(optimizer.size(), steps);
    for (std::size_t k = 0; k < onGpu.size(); ++k) {
      SCOPED_TRACE("bucket allreduce " + std::to_string(k));
      EXPECT_GE(onGpu[k].b, launched[k].b - 50.0);
      EXPECT_LE(onGpu[k].e, optimizer[k / buckets].b + 1.0);
    }
  }
}

// A GPU span named `name` on cuda:0's default stream around a 1024^3 matrix product (which takes
// time), closed at return.
void spanAroundAProduct(const char* name, const torch::Tensor& x, trace::Track track = trace::Track::Gpu) {
  trace::GpuSpan s(name, trace::Category::Compute, track, 0, nullptr);
  (void)x.mm(x);
}

// The GPU span queue: what a recording queued is flushed by that recording only.
TEST(GpuTrace, SpansOfAnEndedRecordingAreDroppedNotRecorded) {
  TPB_REQUIRE_GPU(false);
  const auto x = torch::ones({1024, 1024}, torch::kCUDA);
  trace::enable(true);
  spanAroundAProduct("stale", x);
  EXPECT_EQ(trace::pendingGpuSpans(), 1u);
  trace::enable(true);  // a new recording: the span above belongs to the last one
  spanAroundAProduct("kept", x);
  trace::GpuSpan* open = new trace::GpuSpan("open across the flush", trace::Category::Compute, trace::Track::Gpu, 0, nullptr);
  trace::flushGpu();
  delete open;  // records nothing: its slot went with the flush
  EXPECT_EQ(trace::pendingGpuSpans(), 0u);
  const std::vector<trace::Event> events = trace::take();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_STREQ(events[0].name, "kept");
  EXPECT_EQ(events[0].track, trace::Track::Gpu);
  EXPECT_GT(events[0].endNs, events[0].beginNs) << "a 1024^3 matrix product takes time";
  EXPECT_LE(events[0].endNs, trace::nowNs());
  trace::flushGpu();
  EXPECT_EQ(trace::size(), 0u);
  trace::enable(false);
}

// A span still open at a flush is dropped even when its events come from the pool: the end
// event it took holds an earlier span's recording, which cudaEventElapsedTime reads happily.
TEST(GpuTrace, ASpanOpenAtAFlushIsDroppedEvenOnRecycledEvents) {
  TPB_REQUIRE_GPU(false);
  const auto x = torch::ones({1024, 1024}, torch::kCUDA);
  trace::enable(true);
  spanAroundAProduct("first", x);
  trace::flushGpu();  // both of its events go back to the pool, recorded
  ASSERT_EQ(trace::take().size(), 1u);
  auto* open = new trace::GpuSpan("open across the flush", trace::Category::Compute, trace::Track::Gpu, 0, nullptr);
  (void)x.mm(x);
  trace::flushGpu();
  delete open;
  EXPECT_EQ(trace::size(), 0u) << "the open span was read through its recycled end event";
  trace::enable(false);
}

// GPU spans are queued from any thread while tracing is on (DDP's hooks run on LibTorch's
// autograd thread) and read by the recording thread's flush; a thread can opt out.
TEST(GpuTrace, SpansFromOtherThreadsAreRecordedUnlessTheThreadOptsOut) {
  TPB_REQUIRE_GPU(false);
  const auto x = torch::ones({1024, 1024}, torch::kCUDA);
  trace::enable(true);
  std::thread([&] { spanAroundAProduct("other thread", x, trace::Track::GpuComm); }).join();
  std::thread([&] {
    const trace::NoGpuSpansOnThisThread quiet;
    spanAroundAProduct("opted out", x);
  }).join();
  EXPECT_EQ(trace::pendingGpuSpans(), 1u);
  trace::flushGpu();
  const std::vector<trace::Event> events = trace::take();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_STREQ(events[0].name, "other thread");
  EXPECT_EQ(events[0].track, trace::Track::GpuComm);
  EXPECT_GT(events[0].endNs, events[0].beginNs);
  trace::enable(false);
}

TEST(GpuTrainCli, MoreGpusThanVisibleIsOneUsageError) {
  TPB_REQUIRE_GPU(true);
  const std::string n = std::to_string(visibleCudaDevices() + 1);
  // data_parallel is one process, but it needs n GPUs all the same.
  const auto r = runCli({"run", "--device", "cuda", "--strategy", "data_parallel", "--n_gpus", n, "--epochs", "1"});
  test::expectRefusedUpFront(r, "--n_gpus");
}

}  // namespace
}  // namespace tpb
