// comm/cuda/reduce_cuda.h — the float32 sum kernel on device memory; the GPU counterpart of
// comm/reduce.h's reduceSum, used by the NCCL transport's irecvReduce.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace tpb {

// dst[i] += src[i] for i < n, enqueued on stream `s` (asynchronous: nothing waits here). Any
// count and any float alignment: when dst and src sit at the same offset modulo 16 bytes, the
// body moves float4 vectors and only a scalar head and tail remain; otherwise every element is
// scalar. dst and src must not overlap. Throws tpb::Error if the launch fails.
void reduceSumCuda(float* dst, const float* src, std::size_t n, cudaStream_t s);

// Loads the sum kernel onto the current device now. Under lazy loading (CUDA's default since
// 12.2) a kernel is loaded at its first launch, which may wait for the whole device; the nccl
// transport's first sum is launched right after a group whose NCCL kernel is still waiting for
// its peer, so it loads the kernel while it sets up instead. Throws tpb::Error on failure.
void loadReduceSumKernel();

}  // namespace tpb
