// record/history.h — `tpbench history DIR`: how each point's numbers moved over a series of
// results files (one per commit, their names in commit order: 0001-abc.json, ...), and where
// they changed level (record/change_points.h: E-Divisive with means).
//
// A series is one point (labelled and matched as compare matches points) and one metric, its
// value in a file the median over the file's ok repeats of that point; a file without the point
// leaves a gap, not a zero. Series with fewer than 2 x minSize values have no change point.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "record/change_points.h"

namespace tpb {

// The most files history reads: the E-Divisive search keeps three tables of n x n numbers per
// series (docs/reports.md, "History"), 96 MB at 2000 files; 20 000 files would need 9.6 GB.
inline constexpr std::size_t kMaxHistoryFiles = 2000;

struct HistoryOptions {
  std::string dir;
  // The metrics followed: timings (samples_per_s, epoch_s, busbw_gbps) and accuracy
  // (final_test_accuracy, final_train_loss).
  std::vector<std::string> metrics = {"samples_per_s", "busbw_gbps", "final_test_accuracy"};
  ChangePointOptions changePoints;
};

struct HistorySeries {
  std::string point, metric;
  std::vector<std::size_t> files;  // per value: its file's index in History::files
  std::vector<double> values;
  std::vector<ChangePoint> changes;  // ChangePoint::index counts values, not files
};

struct History {
  std::vector<std::string> files;  // names in DIR, in order
  std::vector<HistorySeries> series;
  std::size_t changes() const;
};

// The metrics history can follow.
const std::vector<std::string>& historyMetrics();

// Throws UsageError for a directory that is not one (or a link), holds no results file or a
// file that is not one, and for an unknown metric or options out of range.
History readHistory(const HistoryOptions& opt);

// "text" (a table, series with change points first), "markdown" or "json" (schema
// "tpbench.history/1": files, options and every series with its values and change points).
std::string formatHistory(const History& h, const HistoryOptions& opt, const std::string& format);

}  // namespace tpb
