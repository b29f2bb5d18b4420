// core/entry.h — what every registered algorithm and strategy says about itself, so that the
// launcher, the results, the report and the tests never switch on names: where it comes from,
// where it sorts and which colour draws it. Results record these fields with every point
// (results/README.md), so a report drawn from another build's files needs no registry.
#pragma once

#include <functional>
#include <string>

namespace tpb {

enum class Device;  // comm/transport.h

enum class Origin {
  FromScratch,        // written here over Transport P2P only
  Library,            // a communication library's own collective (gloo, mpi, nccl)
  BuiltinEquivalent,  // a framework's algorithm rebuilt here (DDP, DataParallel)
  Reference,          // no synchronisation at all (the one-device loop)
  PyTorchReference,   // PyTorch's own implementation, run as Python (torch_ddp, torch_dp)
};

// "from scratch", "library", "builtin-equivalent", "reference", "reference (PyTorch)": the text
// results and `tpbench list` show.
const char* originName(Origin o);

struct EntryInfo {
  std::string name;
  Origin origin = Origin::FromScratch;
  std::string description;  // one line for `tpbench list`
  int order = 100;          // display order in tables and chart legends (ascending)
  std::string color;        // "#rrggbb": the same in every chart
  // A PyTorch reference: the entry here that rebuilds its algorithm ("ddp" for torch_ddp), so
  // that charts drawing that entry draw its reference beside it. Empty for everything else.
  std::string referenceOf;
  // What carries its data on a device where that is not the run's transport: "gloo-tcp" (c10d
  // Gloo's own TCP pairs), "mpi" (an MPI communicator), "nccl" (a communicator of its own).
  // Unset, or "" for a device: the run's transport carries it (everything from scratch).
  std::function<std::string(Device)> carrier;
};

// The carriers entries name besides the transports' own names.
constexpr const char kCarrierGlooTcp[] = "gloo-tcp";
constexpr const char kCarrierMpi[] = "mpi";
constexpr const char kCarrierNccl[] = "nccl";

// What carried an entry's data on `device` in a run over `transport`: its own carrier, else
// the transport. Results record it beside the transport (results/README.md, "carrier").
inline std::string carrierOf(const EntryInfo& e, Device device, const std::string& transport) {
  std::string own = e.carrier ? e.carrier(device) : std::string();
  return own.empty() ? transport : own;
}

}  // namespace tpb
