// workload/dataset_check.h — a cheap up-front check of a --dataset value, so a typo or a missing
// file is a usage error before any rank is launched (the full parse happens in every rank), and
// the dataset's sizes are known to the checks of --train_size and --test_size.
#pragma once

#include <cstddef>
#include <string>

namespace tpb {

struct DatasetSizes {
  std::size_t train = 0, test = 0;  // samples
};

// Throws UsageError naming `flag` if `spec` is neither "synthetic" nor "mnist:DIR" with the
// four IDX files (plain or .gz) readable in DIR, each with an IDX header of the right kind and
// image and label counts that agree. Returns the sample counts: synthetic's fixed sizes, or the
// counts in the IDX headers (only the headers are read, decompressed where gzipped).
DatasetSizes checkDatasetSpec(const std::string& flag, const std::string& spec);

}  // namespace tpb
