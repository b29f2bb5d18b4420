// Fuzz target: `tpbench report RESULTS [--trace TRACE] -o DIR --gnuplot ""`: the whole report
// from a results file (and a trace file after "\n----\n", if any) to index.md, index.html, the
// CSV tables and every chart's .dat and .gp, short of running gnuplot. Series whose records
// predate the entry fields get fallback styles: the CLI's registry lookup needs LibTorch.
#include <filesystem>

#include "common/error.h"
#include "report/report.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto parts = tpb::fuzz::splitParts(data, size, 2);
  tpb::ReportOptions opt;
  opt.inputs = {tpb::fuzz::writeInput("results.json", parts.front())};
  if (parts.size() > 1) opt.traces = {tpb::fuzz::writeInput("trace.json", parts.back())};
  opt.outDir = (tpb::fuzz::scratchDir() / "report").string();
  opt.gnuplot = "";
  try {
    (void)tpb::writeReport(opt);
  } catch (const tpb::UsageError& e) {
    tpb::fuzz::checkRefusal(e.what(), {opt.inputs.front(), parts.size() > 1 ? opt.traces.front() : ""});
  }
  std::filesystem::remove_all(opt.outDir);  // each input gets an empty directory, as a first report does
  return 0;
}
