#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "common/error.h"
#include "common/text_escape.h"
#include "core/registry.h"
#include "harness/cli/cli_checks.h"
#include "harness/cli/commands.h"
#include "report/report.h"

namespace tpb::cli {

namespace {

// This build's registry as the report's style for records older than the entry fields.
std::optional<report::SeriesStyle> registryStyle(report::SeriesKind kind, const std::string& name) {
  return kind == report::SeriesKind::Algorithm ? report::styleAmong(allreduceAlgos(), name, originName)
                                               : report::styleAmong(trainStrategies(), name, originName);
}

}  // namespace

void addReport(CLI::App& app, Action& action) {
  auto o = std::make_shared<ReportOptions>();
  o->styles = registryStyle;
  auto* cmd = app.add_subcommand(
      "report",
      "Draw the charts (gnuplot: PNG + SVG, with their .gp scripts and .dat data) and write index.md and "
      "index.html with summary tables, run metadata and a one-line reading of each chart. Several results "
      "files are merged; charts without data are listed as skipped.");
  cmd->add_option("RESULTS", o->inputs, "Results JSON files");
  cmd->add_option("--trace", o->traces,
                  "Trace files of run/sweep --trace (repeatable): draws one step per strategy as a timeline and "
                  "tables how much communication computation hid (overlap.csv)");
  cmd->add_option("-o,--out", o->outDir, "Output directory (created)")->required();
  cmd->add_option("--where", o->where,
                  "KEY=VALUE (repeatable): chart only the runs whose config holds it (batch_size=32, n_gpus=2, "
                  "workload=resnet ...): a chart showing one of several configurations then shows that one");
  cmd->add_option("--gnuplot", o->gnuplot, "gnuplot binary (\"\" draws no charts: tables, .dat and .gp only)")->capture_default_str();
  cmd->callback([&action, o, cmd] {
    action = [o, cmd] {
      checkGivenNotEmpty(cmd, "--out", o->outDir);
      if (o->inputs.empty() && o->traces.empty())
        TPB_THROW(UsageError, "report: give a results file (RESULTS), a trace file (--trace FILE), or both");
      const ReportSummary s = writeReport(*o);
      // Run labels and reasons quote the input files: printed, they must not drive the terminal.
      const std::string dir = printable(o->outDir);
      for (const auto& d : s.drawn) std::cout << "drawn:   " << dir << "/" << d << ".png (.svg .gp .dat)\n";
      for (const auto& [id, why] : s.skipped) std::cout << "skipped: " << id << ": " << printable(why) << "\n";
      for (const auto& line : s.overlap) std::cout << "overlap: " << printable(line) << "\n";
      std::cout << "index:   " << dir << "/index.html, " << dir << "/index.md\n";
      return 0;
    };
  });
}

}  // namespace tpb::cli
