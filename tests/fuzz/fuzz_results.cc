// Fuzz target: a results file (schema tpbench.results/2, or /1) as `report`, `compare`, `model` and
// `--resume` read it (ResultsFile::load). What load accepts must also survive a round trip: the
// document it builds, written back as `--resume` writes it, loads to the same document.
#include <cstdio>
#include <cstdlib>

#include "common/error.h"
#include "record/results.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = tpb::fuzz::writeInput("results.json", {reinterpret_cast<const char*>(data), size});
  nlohmann::json doc;
  try {
    doc = tpb::ResultsFile::load(path).doc();
  } catch (const tpb::UsageError& e) {
    tpb::fuzz::checkRefusal(e.what(), {path});
    return 0;
  }
  const std::string again = tpb::fuzz::writeInput("again.json", doc.dump(1));
  if (tpb::ResultsFile::load(again).doc() != doc) {
    std::fprintf(stderr, "tpb fuzz: a loaded results file does not read back as itself\n");
    std::abort();
  }
  return 0;
}
