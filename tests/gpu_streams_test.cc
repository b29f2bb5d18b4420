// Ordering between the default stream, where LibTorch queues its kernels, and the other streams
// of a GPU (the nccl transport's): the waits the training loop makes before reading its clocks
// must cover the one and leave the other alone. GpuStreams.* need a CUDA GPU (ctest label
// "gpu") and skip without one; DriverVersion.* and RankGpu.* run everywhere.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "comm/cuda/devices.h"
#include "harness/device_choice.h"
#include "tests/gpu_util.h"

#ifdef TPB_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "comm/cuda/cuda_check.h"
#endif

namespace tpb {
namespace {

// ---- the driver version in /proc/driver/nvidia/version ------------------------------------------

TEST(DriverVersion, ProprietaryModuleLine) {
  EXPECT_EQ(parseDriverVersionLine("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  "
                                   "Tue Mar  5 22:23:56 UTC 2024"),
            "550.54.15");
}

TEST(DriverVersion, OpenKernelModuleLineIsNotReadAsFor) {
  // The open module names itself differently; the word after "Kernel Module" is "for".
  EXPECT_EQ(parseDriverVersionLine("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  "
                                   "580.65.06  Release Build  (dvs-builder@U16-I3-B03-4-3)  "
                                   "Sun Jul 27 06:54:38 UTC 2025"),
            "580.65.06");
  EXPECT_EQ(parseDriverVersionLine("NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  "
                                   "570.133.20  Release Build"),
            "570.133.20");
}

TEST(DriverVersion, TwoPartVersionAndNoVersion) {
  EXPECT_EQ(parseDriverVersionLine("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104  Mon"), "535.104");
  EXPECT_EQ(parseDriverVersionLine("NVRM version: NVIDIA UNIX x86_64 Kernel Module"), std::nullopt);
  EXPECT_EQ(parseDriverVersionLine(""), std::nullopt);
  // Not versions: a trailing dot, a leading dot, letters, a time.
  EXPECT_EQ(parseDriverVersionLine("550. .54 x86.64 22:23:56 2024"), std::nullopt);
}

// ---- which GPU a rank drives -------------------------------------------------------------------

TEST(RankGpu, LocalRankPicksItsGpuAmongSeveral) {
  EXPECT_EQ(rankCudaDevice(0, 4), 0);
  EXPECT_EQ(rankCudaDevice(3, 4), 3);
  EXPECT_EQ(rankCudaDevice(4, 4), -1);
  EXPECT_EQ(rankCudaDevice(1, 2), 1);
  EXPECT_EQ(rankCudaDevice(-1, 2), -1);
  EXPECT_EQ(rankCudaDevice(0, 0), -1);
}

// srun --gpus-per-task=1 (or a CUDA_VISIBLE_DEVICES per rank): every rank sees its own GPU as
// device 0, whatever its LOCAL_RANK.
TEST(RankGpu, AProcessThatSeesOneGpuDrivesIt) {
  for (int localRank : {0, 1, 3, 7}) EXPECT_EQ(rankCudaDevice(localRank, 1), 0) << localRank;
}

TEST(RankGpu, OneVisibleGpuIsEnoughOnlyForARankOfAnExternalJob) {
  // tpbench's own launcher shows all its ranks the same GPUs: one each.
  EXPECT_TRUE(gpusSuffice(2, 2, false));
  EXPECT_FALSE(gpusSuffice(2, 1, false));
  EXPECT_FALSE(gpusSuffice(3, 2, false));
  // A rank of torchrun/srun/mpirun that sees one GPU drives it, however many share the node.
  EXPECT_TRUE(gpusSuffice(4, 1, true));
  EXPECT_TRUE(gpusSuffice(1, 1, true));
  // Seeing several but fewer than the node's ranks is still too few; none is never enough.
  EXPECT_FALSE(gpusSuffice(4, 2, true));
  EXPECT_FALSE(gpusSuffice(2, 0, true));
  EXPECT_FALSE(gpusSuffice(1LL << 40, 2, true));
}

// ---- GPU: waitDefaultStream ---------------------------------------------------------------------

#ifdef TPB_HAVE_CUDA
// A host function queued on a stream holds that stream (and nothing else) until released.
struct Gate {
  std::atomic<bool> open{false};
  std::atomic<bool> ran{false};
  static void CUDART_CB hold(void* p) {
    auto* g = static_cast<Gate*>(p);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!g->open.load() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    g->ran.store(true);
  }
};
#endif

TEST(GpuStreams, WaitDefaultStreamDoesNotWaitForAnotherStream) {
  TPB_REQUIRE_GPU(false);
#ifdef TPB_HAVE_CUDA
  TPB_CUDA_CHECK(cudaSetDevice(0));
  cudaStream_t other = nullptr;  // like the nccl transport's stream
  TPB_CUDA_CHECK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  Gate gate;
  TPB_CUDA_CHECK(cudaLaunchHostFunc(other, &Gate::hold, &gate));
  // A device-wide synchronize (the old torch::cuda::synchronize) would block here until the gate
  // opens; the default stream's wait must return while `other` is still held.
  auto waited = std::async(std::launch::async, [] {
    TPB_CUDA_CHECK(cudaSetDevice(0));
    waitDefaultStream(0);
  });
  const bool returned = waited.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  const bool otherStillHeld = !gate.ran.load();
  gate.open.store(true);
  waited.get();
  TPB_CUDA_CHECK(cudaStreamSynchronize(other));
  TPB_CUDA_CHECK(cudaStreamDestroy(other));
  EXPECT_TRUE(returned) << "waitDefaultStream waited for work on another stream";
  EXPECT_TRUE(otherStillHeld);
#endif
}

TEST(GpuStreams, WaitDefaultStreamWaitsForTheDefaultStream) {
  TPB_REQUIRE_GPU(false);
#ifdef TPB_HAVE_CUDA
  TPB_CUDA_CHECK(cudaSetDevice(0));
  Gate gate;
  TPB_CUDA_CHECK(cudaLaunchHostFunc(cudaStreamLegacy, &Gate::hold, &gate));
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    gate.open.store(true);
  });
  waitDefaultStream(0);
  const bool ranBeforeReturn = gate.ran.load();
  opener.join();
  EXPECT_TRUE(ranBeforeReturn) << "waitDefaultStream returned before the default stream's work ran";
#endif
}

TEST(GpuStreams, WaitDefaultStreamLeavesTheCurrentDeviceAlone) {
  TPB_REQUIRE_GPU(false);
  if (visibleCudaDevices() < 2) GTEST_SKIP() << "needs 2 GPUs, " << visibleCudaDevices() << " visible";
#ifdef TPB_HAVE_CUDA
  TPB_CUDA_CHECK(cudaSetDevice(0));
  waitDefaultStream(1);
  int current = -1;
  TPB_CUDA_CHECK(cudaGetDevice(&current));
  EXPECT_EQ(current, 0);
#endif
}

}  // namespace
}  // namespace tpb
