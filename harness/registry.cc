#include "harness/registry.h"

#include "common/error.h"

namespace tpb {

const std::vector<AllreduceAlgo>& allreduceAlgos() {
  static const std::vector<AllreduceAlgo> table = {
      ringAllreduceAlgo(),
      paramServerAllreduceAlgo(),
      libraryAllreduceAlgo(),
  };
  return table;
}

std::vector<std::string> allreduceNames() {
  std::vector<std::string> names;
  for (const auto& a : allreduceAlgos()) names.push_back(a.name);
  return names;
}

const AllreduceAlgo& findAllreduce(const std::string& flag, const std::string& name) {
  for (const auto& a : allreduceAlgos())
    if (a.name == name) return a;
  std::string names;
  for (const auto& n : allreduceNames()) names += (names.empty() ? "" : ", ") + n;
  TPB_THROW(UsageError, flag << ": unknown algorithm '" << name << "' (choose from " << names << ")");
}

}  // namespace tpb
