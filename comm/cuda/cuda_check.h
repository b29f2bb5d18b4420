// comm/cuda/cuda_check.h — every CUDA runtime and NCCL call goes through these checks (llm.c's
// cudaCheck/ncclCheck: a function that does the work, a macro that supplies file:line). A failed
// call becomes a tpb::Error whose message names the call site, the expression, the error's name
// and text and, for NCCL, the library version and NCCL's own last-error detail, because "unhandled
// system error" alone says nothing about which peer or which setting was at fault.
//
// Compiled by both nvcc (.cu) and the host compiler (.cc): it uses only the runtime's C API.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "common/error.h"

#ifdef TPB_HAVE_NCCL
#include <nccl.h>
#endif

namespace tpb {

inline void cudaCheck(cudaError_t err, const char* expr, const char* file, int line) {
  if (err == cudaSuccess) return;
  detail::throwAt<Error>(file, line,
                         std::string("CUDA error ") + cudaGetErrorName(err) + " (" +
                             cudaGetErrorString(err) + ") in " + expr);
}

#ifdef TPB_HAVE_NCCL
// "2.28.9", from the library actually loaded (which may differ from the headers).
inline std::string ncclVersionString() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess || v <= 0) return "unknown";
  // Codes are MAJOR*10000 + MINOR*100 + PATCH since 2.9, MAJOR*1000 + MINOR*100 + PATCH before.
  const int major = v >= 20900 ? v / 10000 : v / 1000;
  const int minor = v >= 20900 ? v / 100 % 100 : v / 100 % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
}

inline void ncclCheck(ncclResult_t res, const char* expr, const char* file, int line) {
  if (res == ncclSuccess) return;
  std::string msg = std::string("NCCL error ") + std::to_string(static_cast<int>(res)) + " (" +
                    ncclGetErrorString(res) + ") in " + expr + " [NCCL " + ncclVersionString() + "]";
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 13, 0)
  // Thread-local detail of the last failure ("Cuda failure 'out of memory'", a socket error...).
  if (const char* last = ncclGetLastError(nullptr); last && *last) msg += ": " + std::string(last);
#endif
  detail::throwAt<Error>(file, line, msg);
}
#endif

}  // namespace tpb

#define TPB_CUDA_CHECK(expr) ::tpb::cudaCheck((expr), #expr, __FILE__, __LINE__)
#ifdef TPB_HAVE_NCCL
#define TPB_NCCL_CHECK(expr) ::tpb::ncclCheck((expr), #expr, __FILE__, __LINE__)
#endif
