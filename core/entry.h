// core/entry.h — what every registered algorithm and strategy says about itself, so that the
// launcher, the results, the report and the tests never switch on names: where it comes from,
// where it sorts and which colour draws it. Results record these fields with every point
// (results/README.md), so a report drawn from another build's files needs no registry.
#pragma once

#include <string>

namespace tpb {

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
};

}  // namespace tpb
