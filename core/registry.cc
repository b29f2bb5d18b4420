#include "core/registry.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "common/error.h"

namespace tpb {

const char* originName(Origin o) {
  switch (o) {
    case Origin::FromScratch: return "from scratch";
    case Origin::Library: return "library";
    case Origin::BuiltinEquivalent: return "builtin-equivalent";
    case Origin::Reference: return "reference";
    case Origin::PyTorchReference: return "reference (PyTorch)";
  }
  return "unknown";
}

namespace {

// Entries are registered during static initialisation, in an order the linker chooses; the
// tables are built on first use (after main starts) and sorted then.
template <typename Entry>
struct Table {
  std::vector<Entry (*)()> makers;
  std::vector<Entry> entries;
  bool built = false;

  const std::vector<Entry>& get() {
    if (!built) {
      for (auto* make : makers) entries.push_back(make());
      std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
        return a.order != b.order ? a.order < b.order : a.name < b.name;
      });
      for (std::size_t i = 1; i < entries.size(); ++i) {
        if (entries[i].name == entries[i - 1].name) {
          // A programming error in this build, before any command runs: say it and stop.
          std::fprintf(stderr, "tpbench: '%s' is registered twice\n", entries[i].name.c_str());
          std::abort();
        }
      }
      built = true;
    }
    return entries;
  }
};

Table<AllreduceAlgo>& allreduceTable() {
  static Table<AllreduceAlgo> t;
  return t;
}

Table<TrainStrategy>& strategyTable() {
  static Table<TrainStrategy> t;
  return t;
}

template <typename Entry>
std::vector<std::string> namesOf(const std::vector<Entry>& entries) {
  std::vector<std::string> names;
  for (const auto& e : entries) names.push_back(e.name);
  return names;
}

}  // namespace

bool registerAllreduce(AllreduceAlgo (*make)()) {
  allreduceTable().makers.push_back(make);
  return true;
}

bool registerStrategy(TrainStrategy (*make)()) {
  strategyTable().makers.push_back(make);
  return true;
}

const std::vector<AllreduceAlgo>& allreduceAlgos() { return allreduceTable().get(); }

std::vector<std::string> allreduceNames() { return namesOf(allreduceAlgos()); }

const AllreduceAlgo& findAllreduce(const std::string& flag, const std::string& name) {
  for (const auto& a : allreduceAlgos())
    if (a.name == name) return a;
  std::string names;
  for (const auto& n : allreduceNames()) names += (names.empty() ? "" : ", ") + n;
  TPB_THROW(UsageError, flag << ": unknown algorithm '" << name << "' (choose from " << names << ")");
}

const std::vector<TrainStrategy>& trainStrategies() { return strategyTable().get(); }

std::vector<std::string> strategyNames() { return namesOf(trainStrategies()); }

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
