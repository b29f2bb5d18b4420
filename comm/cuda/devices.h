// comm/cuda/devices.h — what this build and this machine offer on the GPU side, asked in one
// place: the launcher's --device checks, `tpbench list`, results meta and the GPU tests all use
// these. Compiled in every build; without CUDA they report nothing (0 devices, no versions), so
// callers need no #ifdefs.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tpb {

// Compiled with the CUDA runtime (kernels) / with NCCL (the nccl transport, ncclAllReduce).
bool cudaCompiled();
bool ncclCompiled();

// GPUs this process can see (cudaGetDeviceCount, which honours CUDA_VISIBLE_DEVICES). 0 in a
// build without CUDA, without a driver, or when the query fails for any reason.
int visibleCudaDevices();
// Why visibleCudaDevices() is 0 ("no CUDA driver: ...", "this build has no CUDA"); empty when
// it is not.
std::string cudaUnavailableReason();
// Device names in device order (cudaGetDeviceProperties().name); empty when none are visible.
std::vector<std::string> cudaDeviceNames();

// NVIDIA driver version ("550.54.15" from /proc/driver/nvidia/version, else the CUDA driver API
// version "CUDA 12.4 driver API"); nullopt when there is no driver.
std::optional<std::string> cudaDriverVersion();
// CUDA runtime linked into this build ("13.0"); nullopt without CUDA.
std::optional<std::string> cudaRuntimeVersion();
// NCCL library loaded ("2.28.9"); nullopt without NCCL.
std::optional<std::string> ncclLibraryVersion();

}  // namespace tpb
