// report/report.h — `tpbench report`: turns one or more results files (schema
// "tpbench.results/2", see results/README.md) into a directory a person can open: one chart per
// experiment the data supports, each as PNG + SVG with its gnuplot script (.gp) and data (.dat)
// beside it so it can be restyled, plus index.md / index.html with the charts, summary tables,
// each input's meta block and a one-line reading of every chart computed from the numbers.
//
// Charts (ids are file names) are registered, one file each, under report/charts/ (see
// report/chart.h). A chart whose data is missing is listed in the index with the reason and not
// drawn; without gnuplot the tables, .dat and .gp files are still written and every chart is
// listed as skipped. Only runs/points with status "ok" count;
// repeats of a point are combined by their median. Series are ordered and coloured by their
// records' entry fields, else by the registry passed in ReportOptions::styles; report/ itself
// knows no strategy or algorithm names (but for the two seed experiments, each in its chart).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "report/style.h"

namespace tpb {

struct ReportOptions {
  std::vector<std::string> inputs;  // results files; their runs and allreduce records are merged
  std::vector<std::string> traces;  // trace files (--trace of run and sweep): timeline, overlap
  std::string outDir;               // created (with parents) when missing
  // gnuplot binary: a path, or a name looked up in PATH. "" or not found => no charts drawn.
  std::string gnuplot = "gnuplot";
  // This build's registry: the style (order, colour, origin) of a strategy or algorithm whose
  // records predate the entry fields (report/style.h). Null: such series get fallback styles.
  report::StyleLookup styles;
  // --where KEY=VALUE (repeatable): only the runs whose config has KEY at VALUE are charted, so a
  // chart that shows one configuration of several ("1 other config not shown") can show another.
  std::vector<std::string> where;
};

struct ReportSummary {
  std::vector<std::string> drawn;                            // chart ids, in index order
  std::vector<std::pair<std::string, std::string>> skipped;  // chart id, reason
  // One line per traced run with communication beside the host thread (ddp): how much of it
  // computation hid.
  std::vector<std::string> overlap;
};

// Writes the report into opt.outDir and says which charts were drawn and which were skipped.
// Throws tpb::UsageError when there is no input (neither results nor trace files), an input
// cannot be read or is not a results or trace file (report/input.h, report/trace_input.h), or outDir cannot be created or written. A gnuplot failure for one
// chart is not an error: that chart is skipped with gnuplot's first line of stderr as reason.
ReportSummary writeReport(const ReportOptions& opt);

namespace report {
struct Chart;
// For a command that draws one chart of its own (tpbench history): prepares outDir as report
// does (created, writable, one writer at a time) and writes c's .dat and .gp there, with its PNG
// and SVG when gnuplot (a path or a name in PATH; "" disables it) drew them. Returns "" when
// drawn, else why not. extraFiles (name, content) are written beside it, each renamed into place.
std::string writeChart(const Chart& c, const std::string& outDir, const std::string& gnuplot,
                       const std::vector<std::pair<std::string, std::string>>& extraFiles = {});
// Before any work: refuses (UsageError naming the file) an outDir that writeChart would refuse
// for holding one of `names` that tpbench did not write; writes nothing.
void checkChartDir(const std::string& outDir, const std::vector<std::string>& names);
}  // namespace report

}  // namespace tpb
