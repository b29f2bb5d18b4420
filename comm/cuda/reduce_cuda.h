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

}  // namespace tpb
