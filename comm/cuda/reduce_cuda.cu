// The device sum kernel. A memory-bound loop: what matters is that each warp issues wide,
// coalesced loads, so the body uses 16-byte float4 accesses whenever the two pointers can be
// brought to 16-byte alignment together (same address modulo 16). A pair that differs modulo 16
// never can be, and runs scalar accesses, which are still coalesced. Grid-stride loops let a
// bounded grid (a few blocks per SM) cover any n.
#include "comm/cuda/reduce_cuda.h"

#include <algorithm>
#include <cstdint>

#include "comm/cuda/cuda_check.h"

namespace tpb {

namespace {

constexpr int kThreads = 256;

// Elements [0, head) scalar, then nvec float4 vectors, then scalar [head + 4*nvec, n).
__global__ void reduceSumKernel(float* __restrict__ dst, const float* __restrict__ src,
                                std::size_t n, std::size_t head, std::size_t nvec) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t tid = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  float4* __restrict__ d4 = reinterpret_cast<float4*>(dst + head);
  const float4* __restrict__ s4 = reinterpret_cast<const float4*>(src + head);
  for (std::size_t i = tid; i < nvec; i += stride) {
    float4 a = d4[i];
    const float4 b = s4[i];
    a.x += b.x;
    a.y += b.y;
    a.z += b.z;
    a.w += b.w;
    d4[i] = a;
  }
  for (std::size_t i = tid; i < head; i += stride) dst[i] += src[i];
  for (std::size_t i = head + nvec * 4 + tid; i < n; i += stride) dst[i] += src[i];
}

int maxBlocks() {
  // A few resident blocks per SM saturate memory bandwidth; more only adds scheduling. Cached
  // per thread and device because the attribute query is not free on the hot path.
  static thread_local int cachedDevice = -1, cachedBlocks = 0;
  int dev = 0;
  TPB_CUDA_CHECK(cudaGetDevice(&dev));
  if (dev != cachedDevice) {
    int sms = 0;
    TPB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    cachedBlocks = std::max(1, sms) * 8;
    cachedDevice = dev;
  }
  return cachedBlocks;
}

}  // namespace

void reduceSumCuda(float* dst, const float* src, std::size_t n, cudaStream_t s) {
  if (n == 0) return;
  const auto d = reinterpret_cast<std::uintptr_t>(dst);
  const auto r = reinterpret_cast<std::uintptr_t>(src);
  std::size_t head = n, nvec = 0;  // no common 16-byte alignment: all scalar
  if (d % 16 == r % 16 && d % 4 == 0) {
    head = std::min<std::size_t>(n, (16 - d % 16) % 16 / 4);  // floats until both are aligned
    nvec = (n - head) / 4;
  }
  const std::size_t tail = n - head - nvec * 4;
  const std::size_t work = std::max({nvec, head, tail});  // longest of the three loops
  const std::size_t blocks = std::min<std::size_t>((work + kThreads - 1) / kThreads,
                                                   static_cast<std::size_t>(maxBlocks()));
  reduceSumKernel<<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(dst, src, n, head, nvec);
  TPB_CUDA_CHECK(cudaGetLastError());
}

void loadReduceSumKernel() {
  // Asking for a kernel's attributes loads it (the CUDA programming guide's way to preload
  // under lazy loading).
  cudaFuncAttributes attributes{};
  TPB_CUDA_CHECK(cudaFuncGetAttributes(&attributes, reduceSumKernel));
}

}  // namespace tpb
