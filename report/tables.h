// report/tables.h — the summary tables of the index page and the CSV files: training runs and
// allreduce points (repeats merged by their median) and each input's meta block.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "report/input.h"
#include "report/page.h"

namespace tpb::report {

// One row per configuration (repeats merged: median of their values, and the min–max of their
// samples/s beside it) and status, strategies in display order. Scaling efficiency, where a record lacks it, against the same config's N=1
// median in the merged data.
Table runsTable(const std::vector<Run>& runs, const Styles& styles);

// One row per algorithm, what carried its data, device, N, size and status: the median time and,
// beside it, the fastest and the slowest timed iteration of the records merged.
Table collectiveTable(const std::vector<CollectivePoint>& points, const Styles& styles);

// One row per GPU allreduce curve (record/reference_busbw.h, curveVerdicts: tpbench's own per
// algorithm, an imported file's per GPU, each per N, nodes, type and reduction): its plateau busbw
// and verdict against the published figure for its platform, or why there is none. No rows (an
// empty table) when no GPU allreduce point is in the inputs.
Table verdictTable(const Inputs& in);

// Training runs and collective points that a rank held back (record/stragglers.h), one row
// each, in input order; no rows when none was.
Table stragglerTable(const std::vector<Run>& runs, const std::vector<CollectivePoint>& points);

// The collectives at a glance (record/collective_summary.h): per op, device and placement
// measured with two or more algorithms of this tpbench (imported points ran elsewhere), the fastest per N and size and every algorithm's median
// time over its, algorithms in display order.
struct GlanceTable {
  std::string title;  // "allreduce (cpu, in place)"
  Table table;
};
std::vector<GlanceTable> glanceTables(const std::vector<CollectivePoint>& points, const Styles& styles);

// One row per traced run: steps, communication beside the host per step and the share of it
// hidden behind computation, the host's own communication per step; overlaps[i] is
// overlapOf(traces[i]) (report/trace_input.h).
Table overlapTable(const std::vector<TracedRun>& traces, const std::vector<Overlap>& overlaps);
// The overlap of one traced run as a sentence: how long communication ran beside the
// computation per step, how much of that was hidden, and how long the host waited for it.
std::string overlapLine(const std::string& label, const Overlap& o);

// field | value
Table metaTable(const std::vector<std::pair<std::string, std::string>>& meta);

}  // namespace tpb::report
