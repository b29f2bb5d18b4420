#include <algorithm>
#include <iostream>
#include <memory>

#include "harness/cli/commands.h"
#include "harness/input_checks.h"
#include "record/compare.h"

namespace tpb::cli {

void addCompare(CLI::App& app, Action& action) {
  struct Args {
    CompareOptions o;
    std::string format = "text";
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "compare",
      "Compare two results files point by point; exit 3 if NEW regressed (timing beyond --threshold, "
      "significant by a Mann-Whitney U test where both sides have >= 5 repeats; accuracy or loss "
      "beyond --acc_tolerance; a point failed or missing). One verdict per point, with its metrics and, for a "
      "training run, whether compute or communication got slower. Each median shows its min-max spread beside it "
      "(over the repeats; a collective's also over its timed iterations), so a change within noise shows as such");
  cmd->add_option("BASE", a->o.basePath, "Baseline results JSON")->required();
  cmd->add_option("NEW", a->o.newPath, "Results JSON to check")->required();
  cmd->add_option("--threshold", a->o.threshold, "Relative slowdown that counts (0.10 = 10 %)")->capture_default_str();
  cmd->add_option("--alpha", a->o.alpha, "Significance level of the U test")->capture_default_str();
  cmd->add_option("--acc_tolerance", a->o.accTolerance,
                  "Largest accepted change of final test accuracy (absolute fraction) and loss (relative)")
      ->capture_default_str();
  // The older spelling, unlisted: read as --acc_tolerance is, and named so in its errors (CLI11
  // names a hidden option "").
  cmd->add_option_function<std::string>("--acc-tolerance", [a](const std::string& text) {
       if (std::string why = realTextProblem(text); !why.empty()) throw CLI::ValidationError("--acc_tolerance", why);
       a->o.accTolerance = std::stod(text);
     })->group("");
  cmd->add_option("--format", a->format, "text, markdown or json")->capture_default_str();
  cmd->add_flag("--paired", a->o.paired,
                "BASE and NEW are directories of rounds (scripts/ab-gate.sh writes them): the *.json files of one name "
                "ran side by side. A timing's slowdown is the median over rounds of NEW's time over BASE's, tested by a "
                "one-sided Wilcoxon signed-rank test of their logs (>= 5 rounds) instead of the U test");
  cmd->add_flag("--scale_by_sgemm", a->o.scaleBySgemm,
                "For a BASE recorded on another machine: judge training runs' timings as if NEW had run on BASE's "
                "machine, NEW's times divided by BASE's meta.sgemm_gflops over NEW's (one thread's matrix product, "
                "measured as each file was started); the medians shown stay as measured. Both files must carry it. "
                "Collectives are not scaled");
  cmd->add_option("--ignore", a->o.ignore,
                  "Settings of a run's config matched whatever their value (comma list of its JSON keys: "
                  "slow_ranks, batch_size, ...): a straggler run against the same run without one")
      ->delimiter(',');
  cmd->add_flag("--allow_busy", a->o.allowBusy,
                "Judge the timings of points whose record says other processes used cores their ranks needed "
                "(machine.busy); without it they are shown and noted, never called a regression (--paired rounds "
                "share the machine and are judged either way)");
  cmd->callback([&action, a] {
    action = [a] {
      checkReal("--threshold", a->o.threshold, kNonNegative);
      checkReal("--alpha", a->o.alpha, {0, 1, true, true});
      checkReal("--acc_tolerance", a->o.accTolerance, kNonNegative);
      // A setting named twice is ignored once (and named once in the labels).
      auto& ignore = a->o.ignore;
      for (std::size_t i = 0; i < ignore.size(); ++i)
        ignore.erase(std::remove(ignore.begin() + static_cast<std::ptrdiff_t>(i) + 1, ignore.end(), ignore[i]),
                     ignore.end());
      const CompareResult r = compareResults(a->o);
      std::cout << formatComparison(r, a->o, a->format);
      return r.regressed() ? 3 : 0;
    };
  });
}

}  // namespace tpb::cli
