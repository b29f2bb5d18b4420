// comm/reduce.h — the float32 sum kernels that every reduction in tpbench goes through.
#pragma once

#include <cstddef>

namespace tpb {

// dst[i] += src[i] for i < n, on host memory. Written as a plain loop over restrict pointers so
// the compiler vectorises it (see comm/reduce_cpu.cc). dst and src must not overlap.
void reduceSum(float* dst, const float* src, std::size_t n);

// dst[i] = a[i] + b[i]; the fused form used where a reduced value is also forwarded.
void addInto(float* dst, const float* a, const float* b, std::size_t n);

}  // namespace tpb
