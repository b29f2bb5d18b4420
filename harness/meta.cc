#include "harness/meta.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <thread>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/version.h>
#if __has_include(<gloo/config.h>)
#include <gloo/config.h>
#endif

#include "comm/cuda/devices.h"
#include "comm/net_iface.h"
#include "common/build_info.h"
#include "common/error.h"

namespace tpb {
namespace {

std::string utcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The first "model name" line of /proc/cpuinfo (x86; most ARM kernels have none: "unknown").
std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::size_t b = colon + 1;
    while (b < line.size() && (line[b] == ' ' || line[b] == '\t')) ++b;
    if (b < line.size()) return line.substr(b);
  }
  return "unknown";
}

// Gloo has no runtime version query; the headers this was compiled against carry one. Debian's
// LibTorch links the system libgloo built from those headers; a PyTorch-provided LibTorch links
// its own copy, which these headers need not describe — hence the "(headers)" note.
std::string glooVersion() {
#ifdef GLOO_VERSION_MAJOR
  return std::to_string(GLOO_VERSION_MAJOR) + "." + std::to_string(GLOO_VERSION_MINOR) + "." +
         std::to_string(GLOO_VERSION_PATCH) + " (headers)";
#else
  return "bundled with libtorch (version not exposed)";
#endif
}

// The 1, 5 and 15 minute load averages; none where the kernel gives no three finite values.
// getloadavg(3) reads /proc/loadavg on Linux and parses it for us (no file of ours to mis-read).
std::optional<std::vector<double>> loadAverage() {
  double avg[3];
  if (getloadavg(avg, 3) != 3) return std::nullopt;
  for (double a : avg) {
    if (!std::isfinite(a) || a < 0) return std::nullopt;
  }
  return std::vector<double>(avg, avg + 3);
}

}  // namespace

// The BLAS threads (OpenBLAS's, where it is the BLAS behind LibTorch) and LibTorch's intra-op
// threads set to one, as in a rank (worker/worker.cc), and put back as they were.
class OneComputeThread {
 public:
  OneComputeThread()
      : torchThreads_(at::get_num_threads()),
        getBlas_(reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"))),
        setBlas_(reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))),
        blasThreads_(getBlas_ && setBlas_ ? getBlas_() : 0) {
    if (torchThreads_ != 1) at::set_num_threads(1);
    if (blasThreads_ > 1) setBlas_(1);
  }
  ~OneComputeThread() {
    if (torchThreads_ != 1) at::set_num_threads(torchThreads_);
    if (blasThreads_ > 1) setBlas_(blasThreads_);
  }
  OneComputeThread(const OneComputeThread&) = delete;
  OneComputeThread& operator=(const OneComputeThread&) = delete;

 private:
  int torchThreads_;
  int (*getBlas_)();
  void (*setBlas_)(int);
  int blasThreads_;
};

double sgemmGflops() {
  constexpr std::int64_t kM = 512, kK = 784, kN = 512;
  constexpr int kWarmups = 2, kTimed = 15;
  const OneComputeThread oneThread;
  const at::Tensor a = at::rand({kM, kK}, at::kFloat), b = at::rand({kK, kN}, at::kFloat);
  at::Tensor c = at::empty({kM, kN}, at::kFloat);
  for (int i = 0; i < kWarmups; ++i) at::mm_out(c, a, b);
  std::vector<double> seconds;
  for (int i = 0; i < kTimed; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    at::mm_out(c, a, b);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  const double fastest = *std::min_element(seconds.begin(), seconds.end());
  return fastest > 0 ? 2.0 * kM * kK * kN / fastest / 1e9 : NAN;
}

std::vector<std::string> visibleGpuNames() {
  // [] in a build without CUDA or on a machine without a driver or GPU (comm/cuda/devices.h).
  return cudaDeviceNames();
}

Meta collectMeta(const std::string& command) {
  Meta m;
  m.tpbenchVersion = build_info::kVersion;
  m.gitSha = build_info::kGitSha;
  m.timestampUtc = utcNow();
  m.host = thisHostName();
  m.cpuModel = cpuModel();
  if (const unsigned cores = std::thread::hardware_concurrency(); cores > 0) m.cpuCores = cores;
  if (const unsigned usable = availableCores(); usable > 0) m.cpusAvailable = usable;
  m.loadAverage = loadAverage();
  if (const double g = sgemmGflops(); std::isfinite(g) && g > 0) m.sgemmGflops = g;
  m.gpus = visibleGpuNames();
  m.driver = cudaDriverVersion();   // null without an NVIDIA driver
  m.cuda = cudaRuntimeVersion();    // null in a build without CUDA
  m.nccl = ncclLibraryVersion();    // null in a build without NCCL
  m.libtorch = TORCH_VERSION;
  m.gloo = glooVersion();
  m.buildType = build_info::kBuildType;
  m.command = command;
  return m;
}

EntryRecord entryRecordOf(const EntryInfo& entry, std::optional<int> dataRanks) {
  EntryRecord e;
  e.origin = originName(entry.origin);
  e.order = entry.order;
  e.color = entry.color;
  e.dataRanks = dataRanks;
  if (!entry.referenceOf.empty()) e.referenceOf = entry.referenceOf;
  return e;
}

}  // namespace tpb
