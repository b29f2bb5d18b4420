// Host sum kernels. The loops are kept trivially vectorisable: restrict pointers, a counted
// loop, no aliasing and no early exits. With -O3 GCC emits packed adds (SSE2 at the baseline
// ISA, wider with -march); `tpbench_micro` measures them in GB/s.
#include "comm/reduce.h"

namespace tpb {

void reduceSum(float* __restrict dst, const float* __restrict src, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] += src[i];
}

void addInto(float* __restrict dst, const float* __restrict a, const float* __restrict b,
             std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = a[i] + b[i];
}

}  // namespace tpb
