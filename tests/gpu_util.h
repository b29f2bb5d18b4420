// tests/gpu_util.h — what GPU tests share: skipping, with the reason, where this build or
// machine cannot run them.
#pragma once

#include <gtest/gtest.h>

#include "comm/cuda/devices.h"

// Skips the calling test unless this build and machine can run `what` on a GPU.
#define TPB_REQUIRE_GPU(needNccl)                                                              \
  do {                                                                                         \
    if (!::tpb::cudaCompiled()) GTEST_SKIP() << "built without CUDA: " << ::tpb::cudaUnavailableReason(); \
    if ((needNccl) && !::tpb::ncclCompiled()) GTEST_SKIP() << "built without NCCL";            \
    if (::tpb::visibleCudaDevices() == 0)                                                      \
      GTEST_SKIP() << "no CUDA GPU: " << ::tpb::cudaUnavailableReason();                       \
  } while (0)

// Skips the calling test unless at least `n` GPUs are visible.
#define TPB_REQUIRE_GPUS(n)                                                                     \
  do {                                                                                          \
    TPB_REQUIRE_GPU(true);                                                                      \
    if (::tpb::visibleCudaDevices() < (n))                                                      \
      GTEST_SKIP() << "needs " << (n) << " GPUs, " << ::tpb::visibleCudaDevices() << " visible"; \
  } while (0)
