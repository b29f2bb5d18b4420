// workload/dataset_check.h — the up-front check of a --dataset value, so a typo, a missing file or
// a bad one is a usage error before any rank is launched, and the dataset's sizes are known to
// the checks of --train_size and --test_size.
#pragma once

#include <cstddef>
#include <string>

namespace tpb {

struct DatasetSizes {
  std::size_t train = 0, test = 0;  // samples
};

// Throws UsageError naming `flag` (and the file) if `spec` is neither "synthetic" nor "mnist:DIR"
// with the four IDX files (plain or .gz) in DIR passing every check the ranks' reader makes
// (workload/idx.h: kind, 28x28 images, exact length, labels 0..9, image and label counts that
// agree). Returns the sample counts: synthetic's fixed sizes, or the files'.
DatasetSizes checkDatasetSpec(const std::string& flag, const std::string& spec);

}  // namespace tpb
