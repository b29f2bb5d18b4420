// workload/dataset_check.h — a cheap up-front check of a --dataset value, so a typo is a usage
// error before any rank is launched (the full parse happens in every rank).
#pragma once

#include <string>

namespace tpb {

// Throws UsageError naming `flag` if `spec` is neither "synthetic" nor "mnist:DIR" with the
// four IDX files (plain or .gz) present in DIR.
void checkDatasetSpec(const std::string& flag, const std::string& spec);

}  // namespace tpb
