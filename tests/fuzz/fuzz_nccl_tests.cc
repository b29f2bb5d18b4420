// Fuzz target: `tpbench import FILE`: nccl-tests' text output or its -J JSON file read into
// records (record/nccl_tests.h). Every record it yields must be one a results file may hold: its
// JSON is read back through the results reader, and a refusal there is a finding.
#include <cstdlib>
#include <cstdio>

#include "common/error.h"
#include "record/nccl_tests.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path =
      tpb::fuzz::writeInput("nccl-tests.log", std::string_view(reinterpret_cast<const char*>(data), size));
  tpb::NcclTestsImport got;
  try {
    got = tpb::importNcclTests(path, "");
  } catch (const tpb::UsageError& e) {
    tpb::fuzz::checkRefusal(e.what(), {path, "--op"});
    return 0;
  }
  for (const auto& p : got.points) {
    const nlohmann::json j = p.toJson();
    try {
      (void)tpb::CollectiveRecord::fromJson(tpb::JsonIn(j, "imported"));
    } catch (const tpb::UsageError& e) {
      std::fprintf(stderr, "an imported record is not a valid record: %s\n%s\n", e.what(), j.dump().c_str());
      std::abort();
    }
  }
  (void)got.meta.toJson();
  return 0;
}
