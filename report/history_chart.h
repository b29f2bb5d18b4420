// report/history_chart.h — the chart of `tpbench history`: each series with a change point as
// a percentage of its first level, file by file, with the change points marked.
#pragma once

#include "record/history.h"
#include "report/chart.h"

namespace tpb::report {

// At most 8 series, those with the most change points first (then in the history's order); a
// history without any change point draws its first 8 series. Each value is divided by the
// mean of its series' first level (before its first change point; the whole series without
// one), so that a 10 % step reads as one on every metric; dashed vertical lines mark each
// change point at its file. reason is set when no series has a value.
Chart historyChart(const History& h);

}  // namespace tpb::report
