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
std::string keyOf(const Entry& e) {
  return e.name;
}
std::string keyOf(const CollectiveAlgo& e) { return e.op + " " + e.name; }

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
      for (std::size_t i = 0; i < entries.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
          if (keyOf(entries[i]) == keyOf(entries[j])) {
            // A programming error in this build, before any command runs: say it and stop.
            std::fprintf(stderr, "tpbench: '%s' is registered twice\n", keyOf(entries[i]).c_str());
            std::abort();
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

Table<CollectiveAlgo>& collectiveTable() {
  static Table<CollectiveAlgo> t;
  return t;
}

// An allreduce algorithm as the collective "allreduce": out of place, the input is copied to the
// output first (untimed setup cannot do it: the input may change between runs).
class AllreduceAsCollective final : public Collective {
 public:
  AllreduceAsCollective(CommContext& ctx, const AllreduceAlgo& algo, const CollectiveArgs& a)
      : device_(ctx.device()), send_(a.send), recv_(a.recv), count_(a.count) {
    inner_ = a.chunkBytes && algo.makeChunked ? algo.makeChunked(ctx, a.recv, a.count, a.chunkBytes)
                                              : algo.make(ctx, a.recv, a.count);
  }
  void run() override {
    copyFloats(device_, recv_, send_, count_);
    inner_->run();
  }
  std::unique_ptr<Request> start() override {
    copyFloats(device_, recv_, send_, count_);
    return inner_->start();
  }
  // Out of place, the copy runs on the default stream, which does not wait for the sums still
  // queued on a library's own stream: a run queued behind another would overwrite the output
  // under the previous sum. Such runs go one at a time.
  bool queuesOnDevice() const override { return send_ == recv_ && inner_->queuesOnDevice(); }
  bool barrier() override { return inner_->barrier(); }

 private:
  Device device_;
  const float* send_;
  float* recv_;
  std::size_t count_;
  std::unique_ptr<Allreduce> inner_;
};

CollectiveAlgo asCollective(const AllreduceAlgo& a) {
  CollectiveAlgo c;
  static_cast<EntryInfo&>(c) = a;
  c.op = "allreduce";
  c.unsupported = a.unsupported;
  c.needsMpiLauncher = a.needsMpiLauncher;
  c.needsSymmetricMemory = a.needsSymmetricMemory;
  c.standsFor = a.standsFor;
  c.cost = a.cost;
  c.traffic = a.traffic;
  c.make = [a](CommContext& ctx, const CollectiveArgs& args) -> std::unique_ptr<Collective> {
    return std::make_unique<AllreduceAsCollective>(ctx, a, args);
  };
  return c;
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

bool registerCollective(CollectiveAlgo (*make)()) {
  collectiveTable().makers.push_back(make);
  return true;
}

const std::vector<CollectiveAlgo>& collectiveAlgos() {
  static const std::vector<CollectiveAlgo> all = [] {
    std::vector<CollectiveAlgo> v;
    for (const auto& op : collectiveOps()) {
      if (op.name == "allreduce")
        for (const auto& a : allreduceAlgos()) v.push_back(asCollective(a));
      for (const auto& c : collectiveTable().get())
        if (c.op == op.name) v.push_back(c);
    }
    for (const auto& c : collectiveTable().get()) {
      findOp("registered collective", c.op);  // an unknown op is this build's error
    }
    return v;
  }();
  return all;
}

std::vector<std::string> collectiveNames(const std::string& op) {
  std::vector<std::string> names;
  for (const auto& c : collectiveAlgos())
    if (c.op == op) names.push_back(c.name);
  return names;
}

const CollectiveAlgo& findCollective(const std::string& flag, const std::string& op, const std::string& name) {
  for (const auto& c : collectiveAlgos())
    if (c.op == op && c.name == name) return c;
  std::string names;
  for (const auto& n : collectiveNames(op)) names += (names.empty() ? "" : ", ") + n;
  TPB_THROW(UsageError, flag << ": no " << op << " algorithm '" << name << "' (choose from " << names << ")");
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
