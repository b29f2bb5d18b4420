#include <iostream>
#include <memory>

#include "common/error.h"
#include "common/text_escape.h"
#include "harness/cli/cli_checks.h"
#include "harness/cli/commands.h"
#include "record/history.h"
#include "report/history_chart.h"
#include "report/report.h"

namespace tpb::cli {

void addHistory(CLI::App& app, Action& action) {
  struct Args {
    HistoryOptions o;
    std::string format = "text", outDir, gnuplot = "gnuplot";
    int minSize = 5;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "history",
      "Follow each point's numbers over a series of results files (DIR/*.json in name order: name them in commit "
      "order) and find where each changed level: E-Divisive with means, each split kept when a permutation test "
      "gives p < --alpha. With -o also the chart (history.png/.svg, .gp, .dat) and the table as history.md and "
      "history.json.");
  cmd->add_option("DIR", a->o.dir, "Directory of results files, one per commit")->required();
  cmd->add_option("--metric", a->o.metrics,
                  "Metrics to follow: samples_per_s, epoch_s, busbw_gbps, final_test_accuracy, final_train_loss")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--alpha", a->o.changePoints.alpha, "Significance of each change point")->capture_default_str();
  cmd->add_option("--permutations", a->o.changePoints.permutations, "Shufflings per permutation test")
      ->capture_default_str();
  cmd->add_option("--min_size", a->minSize, "Files each side of a change point, at least")->capture_default_str();
  cmd->add_option("--exponent", a->o.changePoints.exponent,
                  "Exponent of the distance in the energy statistic, in (0, 2): smaller weighs outliers less")
      ->capture_default_str();
  cmd->add_option("--seed", a->o.changePoints.seed, "Seed of the shufflings")->capture_default_str();
  cmd->add_option("--format", a->format, "text, markdown or json")->capture_default_str();
  cmd->add_option("-o,--out", a->outDir, "Also write the chart, history.md and history.json here (created)");
  cmd->add_option("--gnuplot", a->gnuplot, "gnuplot binary (\"\" draws no chart: .dat and .gp only)")
      ->capture_default_str();
  cmd->callback([&action, a, cmd] {
    action = [a, cmd] {
      if (a->minSize < 2 || a->minSize > 1000) TPB_THROW(UsageError, "--min_size: must be in 2..1000, got " << a->minSize);
      a->o.changePoints.minSize = static_cast<std::size_t>(a->minSize);
      if (cmd->count("--out")) checkGivenNotEmpty(cmd, "--out", a->outDir);
      if (a->format != "text" && a->format != "markdown" && a->format != "json")
        TPB_THROW(UsageError, "--format: unknown format '" << printableLine(a->format) << "' (text, markdown or json)");
      // A directory holding a history.md of the user's is refused before any file is read.
      if (!a->outDir.empty())
        report::checkChartDir(a->outDir, {"history.md", "history.json", "history.png", "history.svg", "history.gp",
                                          "history.dat"});
      const History h = readHistory(a->o);
      std::cout << formatHistory(h, a->o, a->format);
      if (!a->outDir.empty()) {
        const std::string why = report::writeChart(
            report::historyChart(h), a->outDir, a->gnuplot,
            {{"history.md", formatHistory(h, a->o, "markdown")}, {"history.json", formatHistory(h, a->o, "json")}});
        const std::string dir = printable(a->outDir);
        if (why.empty()) std::cout << "drawn:   " << dir << "/history.png (.svg .gp .dat)\n";
        else std::cout << "skipped: history chart: " << printable(why) << "\n";
        std::cout << "table:   " << dir << "/history.md, " << dir << "/history.json\n";
      }
      return 0;
    };
  });
}

}  // namespace tpb::cli
