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
// The GPU that the rank with `localRank` on its node drives, among the `visibleGpus` this process
// sees: cuda:localRank, except that a process which sees exactly one GPU drives that one, as
// cuda:0. Launchers that give each rank a GPU of its own (srun --gpus-per-task=1, or a
// CUDA_VISIBLE_DEVICES per rank) show every rank its GPU as device 0 whatever its LOCAL_RANK.
// -1 when that GPU is not visible (no GPU, or localRank >= visibleGpus > 1). The nccl transport,
// the collective benchmark's buffers and training all place a rank with it.
int rankCudaDevice(int localRank, int visibleGpus);

// Why visibleCudaDevices() is 0 ("no CUDA driver: ...", "this build has no CUDA"); empty when
// it is not.
std::string cudaUnavailableReason();
// Device names in device order (cudaGetDeviceProperties().name); empty when none are visible.
std::vector<std::string> cudaDeviceNames();

// NVIDIA driver version ("550.54.15" from /proc/driver/nvidia/version, else the CUDA driver API
// version "CUDA 12.4 driver API"); nullopt when there is no driver.
std::optional<std::string> cudaDriverVersion();
// The driver version in one line of /proc/driver/nvidia/version: its first word that is a dotted
// number ("550.54.15"), whatever precedes it ("NVIDIA UNIX x86_64 Kernel Module", or the open
// module's "NVIDIA UNIX Open Kernel Module for x86_64"); nullopt when there is none.
std::optional<std::string> parseDriverVersionLine(const std::string& line);

// Blocks the host until the work queued so far on GPU `device`'s default stream has finished:
// the legacy default stream, where LibTorch queues its kernels unless a stream guard says
// otherwise. Work on other streams is not waited for, unlike cudaDeviceSynchronize (and
// torch::cuda::synchronize, which calls it): a collective in flight on the nccl transport's own
// stream neither lands in the caller's compute time nor, when a peer is dead, hangs the caller
// outside the transport's timeout. The calling thread's current device is left as it was.
// Throws tpb::Error on a CUDA error; does nothing in a build without CUDA.
void waitDefaultStream(int device);
// CUDA runtime linked into this build ("13.0"); nullopt without CUDA.
std::optional<std::string> cudaRuntimeVersion();
// NCCL library loaded ("2.28.9"); nullopt without NCCL.
std::optional<std::string> ncclLibraryVersion();

}  // namespace tpb
