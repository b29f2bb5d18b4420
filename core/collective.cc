#include "core/collective.h"

#include <algorithm>
#include <cstring>

#include "common/bus_factor.h"
#include "common/error.h"

#ifdef TPB_HAVE_CUDA
#include "comm/cuda/cuda_check.h"
#endif

namespace tpb {

namespace {

using Input = std::function<float(int, std::size_t)>;

std::size_t whole(std::size_t count, int) { return count; }
std::size_t block(std::size_t count, int n) { return count / static_cast<std::size_t>(n); }

float sumOver(int n, std::size_t j, const Input& in) {
  float s = 0;
  for (int r = 0; r < n; ++r) s += in(r, j);
  return s;
}

// sendrecv's partner: ranks pair up (0,1), (2,3), ...; the last of an odd N has none (-1).
int partnerOf(int rank, int n) {
  const int p = rank ^ 1;
  return p < n ? p : -1;
}

}  // namespace

const std::vector<CollectiveOp>& collectiveOps() {
  static const std::vector<CollectiveOp> ops = {
      {"allreduce", "every rank gets the sum of all inputs", false, true, false, busFactorOf("allreduce"), whole, whole,
       [](int, int n, int, std::size_t, std::size_t i, const Input& in) -> std::optional<float> {
         return sumOver(n, i, in);
       },
       true},
      {"broadcast", "every rank gets the root's input", true, true, false, busFactorOf("broadcast"), whole, whole,
       [](int, int, int root, std::size_t, std::size_t i, const Input& in) -> std::optional<float> {
         return in(root, i);
       }},
      {"reduce", "the root gets the sum of all inputs", true, true, false, busFactorOf("reduce"), whole, whole,
       [](int rank, int n, int root, std::size_t, std::size_t i, const Input& in) -> std::optional<float> {
         if (rank != root) return std::nullopt;
         return sumOver(n, i, in);
       },
       true},
      {"allgather", "every rank gets every rank's block, in rank order", false, true, true, busFactorOf("allgather"), block, whole,
       [](int, int n, int, std::size_t count, std::size_t i, const Input& in) -> std::optional<float> {
         const std::size_t m = count / static_cast<std::size_t>(n);
         return in(static_cast<int>(i / m), i % m);
       }},
      {"reduce_scatter", "rank r gets block r of the sum of all inputs", false, true, true, busFactorOf("reduce_scatter"), whole, block,
       [](int rank, int n, int, std::size_t count, std::size_t i, const Input& in) -> std::optional<float> {
         const std::size_t m = count / static_cast<std::size_t>(n);
         return sumOver(n, static_cast<std::size_t>(rank) * m + i, in);
       },
       true},
      {"alltoall", "rank r's block b goes to rank b, as block r", false, false, true, busFactorOf("alltoall"), whole, whole,
       [](int rank, int n, int, std::size_t count, std::size_t i, const Input& in) -> std::optional<float> {
         const std::size_t m = count / static_cast<std::size_t>(n);
         return in(static_cast<int>(i / m), static_cast<std::size_t>(rank) * m + i % m);
       }},
      {"sendrecv", "ping-pong: ranks 2k and 2k+1 swap buffers (one round trip per iteration)", false, false, false,
       busFactorOf("sendrecv"), whole, whole,
       [](int rank, int n, int, std::size_t, std::size_t i, const Input& in) -> std::optional<float> {
         const int p = partnerOf(rank, n);
         if (p < 0) return std::nullopt;
         return in(p, i);
       },
       false,
       // nccl-tests' sendrecv times one exchange in which every rank sends and receives at once.
       "; a ping-pong: time is a round trip, busbw about half nccl-tests' sendrecv"},
  };
  return ops;
}

std::vector<std::string> opNames() {
  std::vector<std::string> names;
  for (const auto& o : collectiveOps()) names.push_back(o.name);
  return names;
}

const CollectiveOp& findOp(const std::string& flag, const std::string& name) {
  for (const auto& o : collectiveOps())
    if (o.name == name) return o;
  std::string names;
  for (const auto& n : opNames()) names += (names.empty() ? "" : ", ") + n;
  TPB_THROW(UsageError, flag << ": unknown collective '" << name << "' (choose from " << names << ")");
}

FloatScratch::FloatScratch(Device device, std::size_t count) {
  if (device == Device::Cpu) {
    host_.resize(std::max<std::size_t>(1, count));
    return;
  }
#ifdef TPB_HAVE_CUDA
  TPB_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&dev_), std::max<std::size_t>(1, count) * sizeof(float)));
#else
  TPB_THROW(Error, "device memory in a build without CUDA");
#endif
}

FloatScratch::~FloatScratch() {
#ifdef TPB_HAVE_CUDA
  if (dev_) cudaFree(dev_);
#endif
}

void copyFloats(Device device, float* dst, const float* src, std::size_t count) {
  if (dst == src || count == 0) return;
  if (device == Device::Cpu) {
    std::memcpy(dst, src, count * sizeof(float));
    return;
  }
#ifdef TPB_HAVE_CUDA
  // Synchronous on the legacy default stream: done before any transport work queued after it.
  TPB_CUDA_CHECK(cudaMemcpy(dst, src, count * sizeof(float), cudaMemcpyDeviceToDevice));
#else
  TPB_THROW(Error, "device copy in a build without CUDA");
#endif
}

}  // namespace tpb
