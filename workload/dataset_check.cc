#include "workload/dataset_check.h"

#include <zlib.h>

#include <cstdint>

#include "common/error.h"
#include "workload/dataset.h"

namespace tpb {
namespace {

// The count in the IDX header of DIR/name (plain or .gz), whose magic number must be `magic`.
std::size_t idxCount(const std::string& flag, const std::string& dir, const std::string& name,
                     std::uint32_t magic) {
  const std::string path = mnistFilePath(dir, name);
  if (path.empty()) TPB_THROW(UsageError, flag << ": " << dir << "/" << name << " (or .gz) is missing");
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) TPB_THROW(UsageError, flag << ": cannot open " << path);
  unsigned char h[8];
  const int got = gzread(f, h, sizeof h);
  gzclose(f);
  if (got != static_cast<int>(sizeof h))
    TPB_THROW(UsageError, flag << ": " << path << " is too short for an IDX header");
  auto be32 = [&h](int at) {
    return (std::uint32_t{h[at]} << 24) | (std::uint32_t{h[at + 1]} << 16) | (std::uint32_t{h[at + 2]} << 8) |
           std::uint32_t{h[at + 3]};
  };
  if (be32(0) != magic)
    TPB_THROW(UsageError, flag << ": " << path << " has magic number " << be32(0) << ", expected " << magic);
  return be32(4);
}

// Samples in one split of MNIST: the images' count, which the labels' must equal.
std::size_t idxSplit(const std::string& flag, const std::string& dir, const std::string& prefix) {
  const std::size_t images = idxCount(flag, dir, prefix + "-images-idx3-ubyte", 2051);
  const std::size_t labels = idxCount(flag, dir, prefix + "-labels-idx1-ubyte", 2049);
  if (images != labels)
    TPB_THROW(UsageError, flag << ": " << dir << " has " << images << " " << prefix << " images but " << labels
                               << " labels");
  return images;
}

}  // namespace

DatasetSizes checkDatasetSpec(const std::string& flag, const std::string& spec) {
  if (spec == "synthetic") return {kSyntheticTrainSize, kSyntheticTestSize};
  if (spec.rfind("mnist:", 0) != 0)
    TPB_THROW(UsageError, flag << ": unknown dataset '" << spec << "' (use synthetic or mnist:DIR)");
  const std::string dir = spec.substr(6);
  if (dir.empty()) TPB_THROW(UsageError, flag << ": mnist:DIR needs a directory");
  return {idxSplit(flag, dir, "train"), idxSplit(flag, dir, "t10k")};
}

}  // namespace tpb
