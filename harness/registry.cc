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

const std::vector<TrainStrategy>& trainStrategies() {
  static const std::vector<TrainStrategy> table = {
      singleStrategy(),
      paramServerStrategy(),
      ringAllReduceStrategy(),
      allreduceStrategy(),
      ddpStrategy(),
      dataParallelStrategy(),
  };
  return table;
}

std::vector<std::string> strategyNames() {
  std::vector<std::string> names;
  for (const auto& s : trainStrategies()) names.push_back(s.name);
  return names;
}

const TrainStrategy& findStrategy(const std::string& flag, const std::string& name) {
  for (const auto& s : trainStrategies()) {
    if (s.name == name) return s;
    for (const auto& a : s.aliases)
      if (a == name) return s;
  }
  std::string names;
  for (const auto& s : trainStrategies()) {
    names += (names.empty() ? "" : ", ") + s.name;
    for (const auto& a : s.aliases) names += " (" + a + ")";
  }
  TPB_THROW(UsageError, flag << ": unknown strategy '" << name << "' (choose from " << names << ")");
}

}  // namespace tpb
