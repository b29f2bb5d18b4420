#include "workload/dataset_check.h"

#include "common/error.h"
#include "workload/dataset.h"
#include "workload/idx.h"

namespace tpb {

DatasetSizes checkDatasetSpec(const std::string& flag, const std::string& spec) {
  if (spec == "synthetic") return {kSyntheticTrainSize, kSyntheticTestSize};
  if (spec.rfind("mnist:", 0) != 0)
    TPB_THROW(UsageError, flag << ": unknown dataset '" << spec << "' (use synthetic or mnist:DIR)");
  const std::string dir = spec.substr(6);
  if (dir.empty()) TPB_THROW(UsageError, flag << ": mnist:DIR needs a directory");
  // Every file whole, as each rank will read it: a bad label or a cut file is one refusal here
  // rather than a failure inside every rank of every point (MNIST's 55 MB take well under a second).
  return {readMnistPair(dir, "train").images.count, readMnistPair(dir, "t10k").images.count};
}

}  // namespace tpb
