// Fuzz target: a trace file (`--trace FILE`, schema tpbench.trace/1) as both of its readers take
// it: `report --trace` (loadTraces, then the step it draws and the overlap arithmetic of every
// traced run) and a resumed sweep (TraceFile::resume, then one more point added, as the sweep's
// next point does).
#include "common/error.h"
#include "record/trace_file.h"
#include "report/trace_input.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

// A steady-clock reading of a machine up for about a week, in ns: where a resumed sweep's clock is.
constexpr std::int64_t kNowNs = 600'000'000'000'000;

void readForReport(const std::string& path) {
  for (const auto& run : tpb::report::loadTraces({path})) {
    (void)run.ranks();
    (void)tpb::report::representativeStep(run);
    (void)tpb::report::overlapOf(run);
  }
}

void resumeAndAdd(const std::string& path) {
  tpb::TraceFile f = tpb::TraceFile::resume(path, kNowNs);
  const nlohmann::json event = {"step", "step", "step", "host", kNowNs, kNowNs + 1000, 0};
  const nlohmann::json fragment = {{"ranks", {{{"rank", 0}, {"host", "h"}, {"events", {event}}}}}};
  f.add("next point", {{"strategy", "ddp"}}, fragment);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::string path = tpb::fuzz::writeInput("trace.json", bytes);
  try {
    readForReport(path);
  } catch (const tpb::UsageError& e) {
    tpb::fuzz::checkRefusal(e.what(), {path});
  }
  try {
    resumeAndAdd(tpb::fuzz::writeInput("trace.json", bytes));  // readForReport's file, afresh
  } catch (const tpb::UsageError& e) {
    tpb::fuzz::checkRefusal(e.what(), {path});
  }
  return 0;
}
