// harness/import.h — `tpbench import`: nccl-tests' results (its text log or its -J JSON) written as
// a tpbench results file (record/nccl_tests.h), for report, compare and model to read beside
// tpbench's own points.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tpb {

struct ImportOptions {
  std::vector<std::string> files;
  std::string out;
  std::string op;  // "" : each file says which test it is
  int ranks = 0;        // 0: each file says its rank count (Rank lines, command line, busbw / algbw)
  std::string library;  // "nccl", "rccl"; "": each file says it
  int nicsPerNode = 0;  // across nodes, for the verdict: NICs per node and their kind (0, "": unknown)
  std::string nic;
  bool overwrite = false;
};

// Reads every file first (a bad one refuses the whole import, naming it: tpb::UsageError), then
// writes --out and says on `out` what each file gave and what was left out. Returns the exit code.
int runImport(const ImportOptions& o, std::ostream& out);

}  // namespace tpb
