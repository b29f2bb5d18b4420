// record/collective_summary.h — collective results at a glance: per op, device and placement, one
// table whose rows are (N, size) and whose columns are the algorithms measured, each cell the
// algorithm's median time over the fastest one's. The fastest is named only where its lead is
// beyond the measured spread: where its min–max range overlaps the runner-up's, the row says the
// two are within noise. `tpbench allreduce` and `collective` print it after their tables
// (harness/console_report.h); `tpbench report` draws it (report/tables.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "record/records.h"

namespace tpb {

// One measured point, as the summary reads it.
struct CollectiveTiming {
  std::string op, algo, carrier, device;
  bool inPlace = true;
  int n = 0;
  std::uint64_t bytes = 0;
  double medianUs = NAN, minUs = NAN, maxUs = NAN, busbwGbps = NAN;
  bool busy = false;  // its record's machine.busy: other processes took cores it needed
};

// An ok, measured record as a timing; nullopt for any other.
std::optional<CollectiveTiming> timingOf(const CollectiveRecord& r);

// One column's points at one (N, size), repeats merged: the median of their medians and of
// their busbw, the lowest min and the highest max.
struct Contender {
  double medianUs = NAN, minUs = NAN, maxUs = NAN, busbwGbps = NAN;
  bool busy = false;  // a repeat ran on a busy machine
};

struct SummaryRow {
  int n = 0;
  std::uint64_t bytes = 0;
  std::vector<std::optional<Contender>> cells;  // one per column; nullopt: not measured there
  std::size_t winner = 0;                        // the column with the lowest median
  std::optional<std::size_t> runnerUp;           // the next lowest, where another was measured
  // The winner's min–max range overlaps the runner-up's: its lead is within the measured noise.
  bool withinNoise = false;
  // A cell ran on a busy machine: no fastest is named (winnerText), the ratios stay as measured.
  bool busy = false;
};

struct SummaryTable {
  std::string op, device;
  bool inPlace = true;
  // The algorithms in the order first met; "ring over gloo" where one ran over several carriers.
  std::vector<std::string> columns;
  std::vector<SummaryRow> rows;  // by N, then size
};

// The tables of the points, in the order their op, device and placement are first met.
std::vector<SummaryTable> summaryTables(const std::vector<CollectiveTiming>& points);

// "ring" or, within noise, "ring ≈ tree"; on a busy machine "none named (machine busy)".
std::string winnerText(const SummaryTable& t, const SummaryRow& r);
// A column's median time over the winner's, "1.35x"; "-" where it was not measured.
std::string ratioText(const SummaryRow& r, std::size_t column);

}  // namespace tpb
