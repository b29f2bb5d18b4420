// StreamClock: GPU time on the default stream, read after the host has waited for it. The Gpu*
// suite needs a CUDA GPU (ctest label "gpu"); the other runs everywhere.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>

#include "comm/cuda/devices.h"
#include "comm/cuda/stream_clock.h"
#include "tests/gpu_util.h"

namespace tpb {
namespace {

// CPU runs time with the host clock: an inert clock records nothing and reads nothing.
TEST(StreamClock, InertWithoutADevice) {
  StreamClock clock(-1);
  EXPECT_FALSE(clock.active());
  const std::size_t from = clock.mark();
  clock.closeSpan(from);
  EXPECT_EQ(clock.takeSpansS(), 0.0);
}

// The spans add up the stream's time of the work between their marks: more than nothing, no more
// than the host saw from the first mark to the end of its wait, and twice the work takes longer
// than once.
TEST(GpuStreamClock, SpansTimeTheWorkBetweenTheirMarks) {
  TPB_REQUIRE_GPU(false);
  const torch::Device gpu(torch::kCUDA, 0);
  const auto a = torch::randn({2048, 2048}, torch::TensorOptions().device(gpu));
  torch::Tensor b = a.mm(a);
  waitDefaultStream(0);
  StreamClock clock(0);
  ASSERT_TRUE(clock.active());
  auto spanOf = [&](int times) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::size_t from = clock.mark();
    for (int i = 0; i < times; ++i) b = a.mm(b).div_(2048.0);
    clock.closeSpan(from);
    waitDefaultStream(0);
    const double host = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double onGpu = clock.takeSpansS();
    EXPECT_GT(onGpu, 0.0);
    EXPECT_LE(onGpu, host);
    return onGpu;
  };
  spanOf(4);  // the first division loads its kernel (tens of ms on an H100): not timed
  const double once = spanOf(4), twice = spanOf(8);
  EXPECT_GT(twice, 1.5 * once) << "once " << once << " s, twice " << twice << " s";
}

}  // namespace
}  // namespace tpb
