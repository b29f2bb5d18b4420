#include "comm/cuda/devices.h"

#include <fstream>
#include <sstream>

#ifdef TPB_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif
#ifdef TPB_HAVE_CUDA
#include "comm/cuda/cuda_check.h"
#endif

namespace tpb {

bool cudaCompiled() {
#ifdef TPB_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

bool ncclCompiled() {
#ifdef TPB_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

namespace {

#ifdef TPB_HAVE_CUDA
// One query, remembered: the answer cannot change within a process, and a missing driver is
// reported the same way every time.
struct DeviceQuery {
  int count = 0;
  std::string whyNone;
};

const DeviceQuery& deviceQuery() {
  static const DeviceQuery q = [] {
    DeviceQuery r;
    const cudaError_t err = cudaGetDeviceCount(&r.count);
    if (err != cudaSuccess) {
      r.count = 0;
      r.whyNone = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(err) + " (" +
                  cudaGetErrorString(err) + ")";
      (void)cudaGetLastError();  // leave no stale error for the next checked call to report
    } else if (r.count == 0) {
      r.whyNone = "cudaGetDeviceCount found no GPU";
    }
    return r;
  }();
  return q;
}

std::string versionFromCode(int code) {
  // CUDA encodes 1000*major + 10*minor.
  return std::to_string(code / 1000) + "." + std::to_string(code % 1000 / 10);
}
#endif

}  // namespace

int visibleCudaDevices() {
#ifdef TPB_HAVE_CUDA
  return deviceQuery().count;
#else
  return 0;
#endif
}

int rankCudaDevice(int localRank, int visibleGpus) {
  if (visibleGpus == 1 && localRank >= 0) return 0;
  return localRank >= 0 && localRank < visibleGpus ? localRank : -1;
}

std::string cudaUnavailableReason() {
#ifdef TPB_HAVE_CUDA
  return deviceQuery().whyNone;
#else
  return "this build has no CUDA (configure did not find the CUDA toolkit)";
#endif
}

std::vector<std::string> cudaDeviceNames() {
  std::vector<std::string> names;
#ifdef TPB_HAVE_CUDA
  for (int d = 0; d < visibleCudaDevices(); ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) == cudaSuccess)
      names.emplace_back(prop.name);
    else
      names.emplace_back("unknown");
  }
#endif
  return names;
}

std::optional<std::string> cudaDriverVersion() {
  // The kernel module's version is what users and bug reports call "the driver version"; the
  // runtime only knows which CUDA API level the driver supports.
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (std::getline(in, line)) {
    if (auto v = parseDriverVersionLine(line)) return v;
  }
#ifdef TPB_HAVE_CUDA
  int code = 0;
  if (cudaDriverGetVersion(&code) == cudaSuccess && code > 0)
    return "CUDA " + versionFromCode(code) + " driver API";
#endif
  return std::nullopt;
}

std::optional<std::string> parseDriverVersionLine(const std::string& line) {
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024"
  // "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build  (...)"
  // Words before the version hold letters ("x86_64", "aarch64"), the date after it has colons.
  std::istringstream words(line);
  std::string w;
  while (words >> w) {
    bool digitBefore = false, ok = true;
    int dots = 0;
    for (const char c : w) {
      if (c >= '0' && c <= '9') {
        digitBefore = true;
      } else if (c == '.' && digitBefore) {
        ++dots;
        digitBefore = false;
      } else {
        ok = false;
        break;
      }
    }
    if (ok && dots > 0 && digitBefore) return w;
  }
  return std::nullopt;
}

void waitDefaultStream(int device) {
#ifdef TPB_HAVE_CUDA
  int current = -1;
  TPB_CUDA_CHECK(cudaGetDevice(&current));
  if (current != device) TPB_CUDA_CHECK(cudaSetDevice(device));
  const cudaError_t err = cudaStreamSynchronize(cudaStreamLegacy);
  if (current != device) cudaSetDevice(current);  // restore even when the wait failed
  TPB_CUDA_CHECK(err);
#else
  (void)device;
#endif
}

std::optional<std::string> cudaRuntimeVersion() {
#ifdef TPB_HAVE_CUDA
  int code = 0;
  if (cudaRuntimeGetVersion(&code) == cudaSuccess && code > 0) return versionFromCode(code);
  return versionFromCode(CUDART_VERSION);
#else
  return std::nullopt;
#endif
}

std::optional<std::string> ncclLibraryVersion() {
#ifdef TPB_HAVE_NCCL
  return ncclVersionString();
#else
  return std::nullopt;
#endif
}

}  // namespace tpb
