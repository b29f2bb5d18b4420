// The GPU path. Tests named Gpu* need a CUDA GPU (ctest label "gpu") and skip, saying why, where
// there is none or the build has no CUDA/NCCL; scripts/gpu-check.sh runs them on a GPU machine.
// The rest run everywhere: what `--device` does on a machine without a GPU, and which transports
// a build registers.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "comm/cuda/devices.h"
#include "comm/gloo/gloo_process_group.h"
#include "comm/store.h"
#include "comm/transports.h"
#include "common/error.h"
#include "core/registry.h"
#include "harness/launch.h"
#include "tests/cli_util.h"
#include "tests/gpu_util.h"
#include "tests/thread_world.h"

#ifdef TPB_HAVE_CUDA
#include "comm/cuda/cuda_check.h"
#include "comm/cuda/reduce_cuda.h"
#endif

namespace tpb {
namespace {

using nlohmann::json;
using test::runCli;

// ---- always: the device flag and the transport table ---------------------------------------

TEST(DeviceCli, CudaWithoutAGpuIsOneUsageErrorNamingDevice) {
  if (ncclCompiled() && visibleCudaDevices() > 0) GTEST_SKIP() << "a GPU is visible here";
  const auto r = runCli({"allreduce", "--device", "cuda", "--n_gpus", "1", "--bytes", "4K"});
  test::expectRefusedUpFront(r, "--device");
}

TEST(DeviceCli, AutoRunsOnCpuWithoutAGpu) {
  if (ncclCompiled() && visibleCudaDevices() > 0) GTEST_SKIP() << "a GPU is visible: auto picks cuda";
  const std::string out = test::tempPath("auto.json");
  const auto r = runCli({"allreduce", "--device", "auto", "--algos", "ring,library", "--n_gpus", "2",
                         "--bytes", "4K,64K", "--iters", "2", "--warmup", "1", "--out", out});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("device=cpu"), std::string::npos) << r.out;
  const json doc = test::readJson(out);
  ASSERT_EQ(doc.at("allreduce").size(), 4u);
  for (const auto& p : doc.at("allreduce")) {
    SCOPED_TRACE(p.dump());
    EXPECT_EQ(p.at("device"), "cpu");  // recorded resolved, never "auto"
    EXPECT_EQ(p.at("transport"), "shm");
    EXPECT_EQ(p.at("timer"), "steady_clock");
    EXPECT_EQ(p.at("status"), "ok");
    EXPECT_EQ(p.at("wrong"), 0);
  }
  // meta tells what this build has: versions where compiled in, no GPUs here.
  const json& meta = doc.at("meta");
  EXPECT_EQ(meta.at("gpus"), json::array());
  EXPECT_EQ(meta.at("cuda").is_string(), cudaCompiled());
  EXPECT_EQ(meta.at("nccl").is_string(), ncclCompiled());
  std::remove(out.c_str());
}

TEST(DeviceCli, NcclTransportOnCpuIsAUsageError) {
  if (!ncclCompiled()) GTEST_SKIP() << "built without NCCL: no nccl transport to refuse";
  const auto r = runCli({"allreduce", "--device", "cpu", "--transport", "nccl", "--n_gpus", "2",
                         "--bytes", "4K"});
  test::expectRefusedUpFront(r, "--transport");
}

TEST(TransportTable, NcclIsRegisteredExactlyWhenCompiledAndOnlyForCuda) {
  const auto& table = transports();
  const bool has = std::any_of(table.begin(), table.end(), [](const auto& t) { return t.name == "nccl"; });
  EXPECT_EQ(has, ncclCompiled());
  EXPECT_EQ(defaultTransport(Device::Cuda, 2, 2), "nccl");
  EXPECT_EQ(defaultTransport(Device::Cpu, 2, 2), "shm");
  for (const auto& t : table) {
    SCOPED_TRACE(t.name);
    EXPECT_EQ(t.unsupported(Device::Cuda, 2, 2).empty(), t.name == "nccl");
    if (t.name == "nccl") {
      EXPECT_FALSE(t.unsupported(Device::Cpu, 2, 2).empty());
    }
  }
}

// From-scratch algorithms run on both devices unless they work in host memory (direct,
// recursive_doubling); each library allreduce on the memory its library reduces (gloo and mpi
// host memory, nccl GPU memory, each registered only where its library is); `library` on cpu
// where Gloo is and on cuda where NCCL is.
TEST(TransportTable, LibraryAllreducesRunWhereTheirLibraryDoes) {
  bool ncclRegistered = false;
  for (const auto& a : allreduceAlgos()) {
    SCOPED_TRACE(a.name);
    const bool cpuOk = a.unsupported(Device::Cpu).empty(), cudaOk = a.unsupported(Device::Cuda).empty();
    ncclRegistered = ncclRegistered || a.name == "nccl";
    if (a.origin != Origin::Library) {
      EXPECT_TRUE(cpuOk);
      if (a.needsSymmetricMemory) {
        EXPECT_FALSE(cudaOk) << "symmetric memory is host memory";
      }
      if (!cudaOk) {
        EXPECT_NE(a.unsupported(Device::Cuda).find("host memory"), std::string::npos)
            << "only host memory keeps a from-scratch algorithm off the GPU";
      }
    } else if (a.name == "library") {
      EXPECT_EQ(cpuOk, glooInThisBuild());
      EXPECT_EQ(cudaOk, ncclCompiled());
    } else {
      EXPECT_NE(cpuOk, cudaOk) << "a library reduces one kind of memory here";
      EXPECT_EQ(cudaOk, a.name == "nccl");
    }
  }
  EXPECT_EQ(ncclRegistered, ncclCompiled());
}

TEST(DeviceQuery, AnswersWithoutThrowing) {
  const int n = visibleCudaDevices();
  EXPECT_GE(n, 0);
  EXPECT_EQ(cudaDeviceNames().size(), static_cast<std::size_t>(n));
  EXPECT_EQ(cudaUnavailableReason().empty(), n > 0);
  EXPECT_EQ(cudaRuntimeVersion().has_value(), cudaCompiled());
  EXPECT_EQ(ncclLibraryVersion().has_value(), ncclCompiled());
}

// ---- GPU: the sum kernel --------------------------------------------------------------------

#ifdef TPB_HAVE_CUDA
// Small integers: every sum is exact, so equality is the right check.
float pattern(std::size_t i, int salt) {
  return static_cast<float>((i * 2654435761u + static_cast<std::size_t>(salt) * 977u) % 1024u);
}

float* deviceFloats(std::size_t count) {
  void* p = nullptr;
  TPB_CUDA_CHECK(cudaMalloc(&p, std::max<std::size_t>(1, count) * sizeof(float)));
  return static_cast<float*>(p);
}
#endif

TEST(GpuReduce, MatchesHostReferenceForAnyCountAndAlignment) {
  TPB_REQUIRE_GPU(false);
#ifdef TPB_HAVE_CUDA
  TPB_CUDA_CHECK(cudaSetDevice(0));
  cudaStream_t s = nullptr;
  TPB_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  constexpr std::size_t kGuard = 8;  // floats either side that must stay untouched
  for (std::size_t count : {0u, 1u, 3u, 4u, 5u, 1000003u}) {
    for (std::size_t dOff : {0u, 1u, 2u, 3u}) {
      for (std::size_t sOff : {0u, 1u, 2u, 3u}) {
        SCOPED_TRACE("count " + std::to_string(count) + " dst+" + std::to_string(dOff) + " src+" +
                     std::to_string(sOff));
        const std::size_t total = count + 2 * kGuard;
        std::vector<float> hd(total), hs(total);
        for (std::size_t i = 0; i < total; ++i) {
          hd[i] = pattern(i, 1);
          hs[i] = pattern(i, 2);
        }
        // cudaMalloc is 256-byte aligned, so the offsets give every alignment pair.
        float* d = deviceFloats(total);
        float* src = deviceFloats(total);
        TPB_CUDA_CHECK(cudaMemcpy(d, hd.data(), total * sizeof(float), cudaMemcpyHostToDevice));
        TPB_CUDA_CHECK(cudaMemcpy(src, hs.data(), total * sizeof(float), cudaMemcpyHostToDevice));
        // dst and src windows start at kGuard - 4 + offset, so both stay inside the guards.
        const std::size_t db = kGuard - 4 + dOff, sb = kGuard - 4 + sOff;
        reduceSumCuda(d + db, src + sb, count, s);
        TPB_CUDA_CHECK(cudaStreamSynchronize(s));
        std::vector<float> got(total);
        TPB_CUDA_CHECK(cudaMemcpy(got.data(), d, total * sizeof(float), cudaMemcpyDeviceToHost));
        std::size_t wrong = 0, firstWrong = total;
        for (std::size_t i = 0; i < total; ++i) {
          const bool inside = i >= db && i < db + count;
          const float expect = inside ? hd[i] + hs[i - db + sb] : hd[i];
          if (got[i] != expect && wrong++ == 0) firstWrong = i;
        }
        EXPECT_EQ(wrong, 0u) << "first wrong element at " << firstWrong;
        cudaFree(d);
        cudaFree(src);
      }
    }
  }
  cudaStreamDestroy(s);
#endif
}

// ---- GPU: NCCL transport and the three allreduce algorithms ------------------------------------

#ifdef TPB_HAVE_NCCL
// N ranks as N threads, rank r on cuda:r, each with its own NcclTransport built through the
// transport table (as a worker builds it).
void runGpuThreads(int n, const std::function<void(CommContext&)>& body) {
  test::runThreads("nccl", n, body, std::chrono::seconds(60), Device::Cuda);
}

// Every algorithm, for sizes that exercise empty, tiny, odd and multi-chunk buffers, against
// exact expected sums; a 64 KiB chunk makes the from-scratch algorithms pipeline on 1 MiB+.
void checkAllreduceExact(int n) {
  const std::vector<std::size_t> counts = {0, 1, 7, 1000, (1u << 18) + 3};
  struct Algo {
    std::string name;
    AllreduceFactory make;
  };
  std::vector<Algo> algos;
  for (const auto& a : allreduceAlgos()) {
    if (!a.unsupported(Device::Cuda).empty()) continue;  // host-memory libraries (gloo, mpi)
    if (!a.makeChunked) {
      algos.push_back({a.name, a.make});
      continue;
    }
    algos.push_back({a.name, [chunked = a.makeChunked](CommContext& c, float* b, std::size_t k) {
                       return chunked(c, b, k, 64u << 10);
                     }});
  }
  for (const auto& algo : algos) {
    for (std::size_t count : counts) {
      SCOPED_TRACE(algo.name + " N=" + std::to_string(n) + " count=" + std::to_string(count));
      std::vector<std::size_t> wrong(n, 0);
      runGpuThreads(n, [&](CommContext& ctx) {
        const int rank = ctx.rank();
        std::vector<float> h(count);
        for (std::size_t i = 0; i < count; ++i) h[i] = pattern(i, rank);
        float* d = deviceFloats(count);
        TPB_CUDA_CHECK(cudaMemcpy(d, h.data(), count * sizeof(float), cudaMemcpyHostToDevice));
        auto ar = algo.make(ctx, d, count);
        for (int rep = 0; rep < 2; ++rep) {  // twice: a second run must start from clean state
          if (rep == 1)
            TPB_CUDA_CHECK(cudaMemcpy(d, h.data(), count * sizeof(float), cudaMemcpyHostToDevice));
          ctx.transport.barrier();
          ar->run();
          TPB_CUDA_CHECK(cudaDeviceSynchronize());
        }
        std::vector<float> got(count);
        TPB_CUDA_CHECK(cudaMemcpy(got.data(), d, count * sizeof(float), cudaMemcpyDeviceToHost));
        for (std::size_t i = 0; i < count; ++i) {
          float expect = 0;
          for (int r = 0; r < n; ++r) expect += pattern(i, r);
          if (got[i] != expect) ++wrong[rank];
        }
        ar.reset();
        cudaFree(d);
      });
      for (int r = 0; r < n; ++r) EXPECT_EQ(wrong[r], 0u) << "rank " << r;
    }
  }
}
#endif

TEST(GpuNccl, AllreduceExactSumsOneRank) {
  TPB_REQUIRE_GPU(true);
#ifdef TPB_HAVE_NCCL
  checkAllreduceExact(1);
#endif
}

TEST(GpuNccl, AllreduceExactSumsTwoRanks) {
  TPB_REQUIRE_GPU(true);
  if (visibleCudaDevices() < 2) GTEST_SKIP() << "needs 2 GPUs, " << visibleCudaDevices() << " visible";
#ifdef TPB_HAVE_NCCL
  checkAllreduceExact(2);
#endif
}

// Every visible GPU (3..8): the parameter server's server and workers group their chunks
// differently than at N = 2 (the server waits for each worker in turn), and the ring's
// neighbours differ from its peers; a grouping that leans on concurrency NCCL does not promise
// shows up as a stall here (a TimeoutError after runGpuThreads' 60 s).
TEST(GpuNccl, AllreduceExactSumsEveryGpuFromThree) {
  TPB_REQUIRE_GPU(true);
  if (visibleCudaDevices() < 3) GTEST_SKIP() << "needs 3 GPUs, " << visibleCudaDevices() << " visible";
#ifdef TPB_HAVE_NCCL
  checkAllreduceExact(std::min(visibleCudaDevices(), 8));
#endif
}

// A peer that never sends: the wait must end in a TimeoutError after the transport's timeout
// (ncclCommAbort ends the stuck receive), not hang, and the transport refuses later calls.
TEST(GpuNccl, APeerThatNeverSendsIsATimeoutNotAHang) {
  TPB_REQUIRE_GPU(true);
  if (visibleCudaDevices() < 2) GTEST_SKIP() << "needs 2 GPUs, " << visibleCudaDevices() << " visible";
#ifdef TPB_HAVE_NCCL
  std::atomic<bool> rank0Done{false};
  std::string firstError, secondError;
  double waitedS = -1;
  test::runThreads("nccl", 2, [&](CommContext& ctx) {
    Transport& t = ctx.transport;
    if (t.rank() == 1) {  // connected (the constructor's exchange), then silent until rank 0 is done
      while (!rank0Done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return;
    }
    float* d = deviceFloats(1024);
    const auto t0 = std::chrono::steady_clock::now();
    try {
      t.recv(1, d, 1024 * sizeof(float));
    } catch (const TimeoutError& e) {
      firstError = e.what();
    }
    waitedS = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    try {
      t.recv(1, d, sizeof(float));
    } catch (const Error& e) {
      secondError = e.what();
    }
    cudaFree(d);
    rank0Done.store(true);
  }, std::chrono::milliseconds(2000), Device::Cuda);
  EXPECT_NE(firstError.find("timed out"), std::string::npos) << firstError;
  EXPECT_GE(waitedS, 2.0);
  EXPECT_LT(waitedS, 30.0);
  EXPECT_NE(secondError.find("aborted"), std::string::npos) << secondError;
#endif
}

TEST(GpuNccl, PointToPointAndRecvReduceTwoRanks) {
  TPB_REQUIRE_GPU(true);
  if (visibleCudaDevices() < 2) GTEST_SKIP() << "needs 2 GPUs, " << visibleCudaDevices() << " visible";
#ifdef TPB_HAVE_NCCL
  // Both ranks post send-then-receive of a message far beyond NCCL's internal buffers: without
  // grouping this is the classic deadlock; a misaligned dst exercises the scalar sum path.
  const std::size_t count = (8u << 20) + 1;
  runGpuThreads(2, [&](CommContext& ctx) {
    Transport& t = ctx.transport;
    const int peer = 1 - t.rank();
    std::vector<float> mine(count), theirs(count);
    for (std::size_t i = 0; i < count; ++i) {
      mine[i] = pattern(i, t.rank());
      theirs[i] = pattern(i, peer);
    }
    float* out = deviceFloats(count);
    float* acc = deviceFloats(count + 1);
    TPB_CUDA_CHECK(cudaMemcpy(out, mine.data(), count * sizeof(float), cudaMemcpyHostToDevice));
    TPB_CUDA_CHECK(cudaMemcpy(acc + 1, mine.data(), count * sizeof(float), cudaMemcpyHostToDevice));
    auto s = t.isend(peer, out, count * sizeof(float));
    auto r = t.irecvReduce(peer, acc + 1, count);
    s->wait();
    r->wait();
    t.barrier();
    std::vector<float> got(count);
    TPB_CUDA_CHECK(cudaMemcpy(got.data(), acc + 1, count * sizeof(float), cudaMemcpyDeviceToHost));
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < count; ++i) wrong += got[i] != mine[i] + theirs[i];
    EXPECT_EQ(wrong, 0u) << "rank " << t.rank();
    cudaFree(out);
    cudaFree(acc);
  });
#endif
}

TEST(GpuCli, AllreduceOnCudaVerifiesEveryAlgorithm) {
  TPB_REQUIRE_GPU(true);
  const int n = std::min(visibleCudaDevices(), 2);
  const std::string out = test::tempPath("gpu.json");
  const auto r = runCli({"allreduce", "--device", "cuda", "--algos", "ring,param_server,library",
                         "--n_gpus", std::to_string(n), "--bytes", "4K,1M,4M", "--iters", "3",
                         "--warmup", "1", "--out", out});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const json doc = test::readJson(out);
  ASSERT_EQ(doc.at("allreduce").size(), 9u);
  for (const auto& p : doc.at("allreduce")) {
    SCOPED_TRACE(p.dump());
    EXPECT_EQ(p.at("status"), "ok");
    EXPECT_EQ(p.at("device"), "cuda");
    EXPECT_EQ(p.at("transport"), "nccl");
    // The library's launches are timed back to back (nccl-tests' method; `allreduce` runs in
    // place); the from-scratch algorithms iteration by iteration, with the host's launch and
    // polling inside.
    ASSERT_TRUE(p.at("in_place").get<bool>());
    EXPECT_EQ(p.at("timer"), p.at("algo") == "library" ? "cuda_events_back_to_back" : "cuda_events_with_host");
    EXPECT_EQ(p.at("wrong"), 0);
  }
  EXPECT_EQ(doc.at("meta").at("gpus").size(), static_cast<std::size_t>(visibleCudaDevices()));
  EXPECT_TRUE(doc.at("meta").at("nccl").is_string());
  std::remove(out.c_str());
}

TEST(GpuCli, MoreRanksThanGpusIsOneUsageErrorNamingNGpus) {
  TPB_REQUIRE_GPU(true);
  const std::string n = std::to_string(visibleCudaDevices() + 1);
  const auto r = runCli({"allreduce", "--device", "cuda", "--n_gpus", n, "--bytes", "4K"});
  test::expectRefusedUpFront(r, "--n_gpus");
}

}  // namespace
}  // namespace tpb
