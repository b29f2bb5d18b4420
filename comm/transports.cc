#include "comm/transports.h"

#include <algorithm>
#include <set>

#include "common/error.h"

#ifdef TPB_HAVE_MPI
#include "comm/mpi/mpi_runtime.h"
#endif

namespace tpb {

namespace {

// Filled by the registrations during static initialisation; a function-local static so that it
// exists before the first registration runs, whatever the order of the object files.
std::vector<TransportInfo (*)()>& registrations() {
  static std::vector<TransportInfo (*)()> makers;
  return makers;
}

std::vector<TransportInfo> buildTable() {
  std::vector<TransportInfo> table;
  for (auto make : registrations()) table.push_back(make());
  std::sort(table.begin(), table.end(), [](const TransportInfo& a, const TransportInfo& b) {
    return a.order != b.order ? a.order < b.order : a.name < b.name;
  });
  // Sorted by order first, two of one name need not be neighbours: check them all.
  std::set<std::string> names;
  for (const auto& t : table) {
    if (!names.insert(t.name).second) TPB_THROW(Error, "transport '" << t.name << "' is registered twice");
  }
  return table;
}

}  // namespace

bool registerTransport(TransportInfo (*make)()) {
  registrations().push_back(make);
  return true;
}

// Built on first use, after static initialisation has run every registration.
const std::vector<TransportInfo>& transports() {
  static const std::vector<TransportInfo> table = buildTable();
  return table;
}

const TransportInfo& findTransport(const std::string& name) {
  std::string names;
  for (const auto& t : transports()) {
    if (t.name == name) return t;
    names += (names.empty() ? "" : ", ") + t.name;
  }
  TPB_THROW(UsageError, "--transport: unknown transport '" << name << "' (this build has: " << names << ")");
}

std::string defaultTransport(Device device, int size, int localSize) {
  if (device == Device::Cuda) return "nccl";
  return localSize == size ? "shm" : "gloo";
}

void startCommProcess() {
#ifdef TPB_HAVE_MPI
  mpi::initialize();
#endif
}

void finishCommProcess() {
#ifdef TPB_HAVE_MPI
  mpi::finalize();
#endif
}

}  // namespace tpb
