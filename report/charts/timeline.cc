// report/charts/timeline.cc — one training step per strategy, as a timeline (`--trace` files):
// a row per rank's host thread (and, below it, the rank's communication track where work ran
// beside the host), a box per span coloured by what it is. For a pipeline it is GPipe's picture
// (F0..F3 then B3..B0, staggered down the stages, the bubble as the white between them); for
// ddp it shows the bucket allreduces starting inside backward.
//
// Per strategy the run shown is the one with the most ranks up to 4 (else the fewest), and its
// step is the middle one (representativeStep). Every strategy's step starts at 0 on one shared
// time axis, so lengths compare directly.
#include <algorithm>
#include <map>
#include <sstream>

#include "record/trace_file.h"
#include "report/chart.h"
#include "report/escape.h"
#include "report/format.h"
#include "report/trace_input.h"

namespace tpb::report {
namespace {

struct Kind {
  const char* title;
  const char* color;
};

// Legend order; kinds() index is the colour a span gets.
const std::vector<Kind>& kinds() {
  static const std::vector<Kind> k = {{"forward", "#1f77b4"},          {"backward", "#ff7f0e"},
                                      {"other compute", "#17becf"},    {"communication", "#2ca02c"},
                                      {"waiting for communication", "#7f7f7f"}, {"optimizer", "#d62728"},
                                      {"evaluation", "#9467bd"}};
  return k;
}

std::size_t kindOf(const TraceSpan& s) {
  if (s.cat == "compute") return s.name == "forward" ? 0 : s.name == "backward" ? 1 : 2;
  if (s.cat == "comm") return 3;
  if (s.cat == "wait") return 4;
  if (s.cat == "optimizer") return 5;
  return 6;
}

long rgbOf(const char* hex) { return std::stol(std::string(hex + 1), nullptr, 16); }

// "F2" / "B2" for a micro-batch's forward/backward; "" otherwise (ddp's buckets overlap each
// other on their track, and their labels would too).
std::string labelOf(const TraceSpan& s) {
  if (s.argKey == "micro" && (s.name == "forward" || s.name == "backward"))
    return (s.name == "forward" ? "F" : "B") + std::to_string(s.arg);
  return "";
}

// A run shown, with its step.
struct Shown {
  const TracedRun* run;
  StepWindow step;
};

// Per strategy, in order of first appearance: the run with the most ranks up to 4, else the
// fewest, among those that hold a training step.
std::vector<Shown> pickRuns(const std::vector<TracedRun>& traces) {
  std::vector<std::string> order;
  std::map<std::string, Shown> best;
  for (const TracedRun& r : traces) {
    StepWindow w = representativeStep(r);
    if (w.step < 0) continue;
    auto it = best.find(r.strategy);
    if (it == best.end()) {
      order.push_back(r.strategy);
      best.emplace(r.strategy, Shown{&r, std::move(w)});
      continue;
    }
    const int have = it->second.run->n;
    const bool better = (r.n <= 4 && (have > 4 || r.n > have)) || (r.n > 4 && have > 4 && r.n < have);
    if (better) it->second = Shown{&r, std::move(w)};
  }
  std::vector<Shown> out;
  for (const auto& s : order) out.push_back(std::move(best.at(s)));
  return out;
}

void build(Chart& c, const Inputs& in) {
  if (in.traces.empty()) {
    c.reason = "no trace given (tpbench run|sweep --trace FILE, then tpbench report --trace FILE)";
    return;
  }
  const std::vector<Shown> runs = pickRuns(in.traces);
  if (runs.empty()) {
    c.reason = "the traces hold no training step";
    return;
  }
  std::ostringstream dat, ytics, separators;
  dat << chartHeader(c) << "# columns: begin_ms end_ms row rgb label (row 0 is the top one)\n";
  int row = 0;
  double longest = 0;
  std::vector<std::string> reading;
  for (const Shown& shown : runs) {
    const TracedRun* r = shown.run;
    const StepWindow& w = shown.step;
    const double len = (w.endUs - w.beginUs) / 1e3;
    longest = std::max(longest, len);
    reading.push_back(r->label + " " + fmtNum(len) + " ms");
    if (row > 0) separators << "set arrow from graph 0, first " << fmtDat(row - 0.5) << " to graph 1, first "
                            << fmtDat(row - 0.5) << " nohead lc rgb '#888888' dt 2\n";
    for (int rank = 0; rank < r->ranks(); ++rank) {
      for (int track = 0; track < kTraceTracks; ++track) {
        std::vector<TraceSpan> mine;
        for (const TraceSpan& s : w.spans)
          if (s.rank == rank && s.track == track) mine.push_back(s);
        if (track > 0 && mine.empty()) continue;
        // Long spans first, so that spans nested in them are drawn on top.
        std::stable_sort(mine.begin(), mine.end(), [](const TraceSpan& a, const TraceSpan& b) {
          return a.endUs - a.beginUs > b.endUs - b.beginUs;
        });
        const std::string name =
            track > 0 ? "rank " + std::to_string(rank) + " " + kTraceTrackNames[track]
                      : (rank == 0 ? r->label + "  " : std::string()) + "rank " + std::to_string(rank);
        ytics << (ytics.tellp() > 0 ? ", " : "") << gnuplotString(name) << " " << row;
        dat << "# " << gnuplotComment(r->label) << ", " << gnuplotComment(name) << ", step " << w.step << "\n";
        for (const TraceSpan& s : mine) {
          const double b = std::max(s.beginUs, w.beginUs), e = std::min(s.endUs, w.endUs);
          dat << fmtDat((b - w.beginUs) / 1e3) << " " << fmtDat((e - w.beginUs) / 1e3) << " " << row << " "
              << rgbOf(kinds()[kindOf(s)].color) << " \"" << labelOf(s) << "\"\n";
        }
        ++row;
      }
    }
  }
  c.dat = dat.str();
  c.subtitle = "the middle step of one traced run per strategy (most ranks up to 4); each rank's host thread, and "
               "below it its communication track where work ran beside the host and, on CUDA, its GPU streams; "
               "time from the step's start";
  c.reading = "One step: " + joinList(reading, "; ") + ".";
  // Labels only where a box is wide enough to hold them.
  const double minLabelMs = longest * 0.03;
  std::ostringstream settings, plot;
  settings << "set xlabel 'ms since the step began'\n"
           << "set xrange [0:" << fmtDat(longest * 1.02) << "]\n"
           << "set yrange [" << fmtDat(row - 0.5) << ":-0.5]\n"
           << "set ytics (" << ytics.str() << ") font ',9'\n"
           << "set grid noytics\n"
           << "set lmargin 34\n"
           << "set style fill solid 0.9 noborder\n"
           << separators.str();
  plot << "plot '" << c.id << ".dat' using (($1+$2)/2):3:(($2-$1)/2):(0.38):4 with boxxyerror lc rgbcolor variable notitle, \\\n"
       << "     '' using (($1+$2)/2):3:(($2-$1) >= " << fmtDat(minLabelMs)
       << " ? stringcolumn(5) : '') with labels font ',8' textcolor rgb 'white' notitle";
  for (const Kind& k : kinds())
    plot << ", \\\n     NaN with boxes lc rgb " << gnuplotColor(k.color) << " title " << gnuplotString(k.title);
  plot << "\n";
  c.gp = gpScript(c, settings.str(), plot.str(), "set key outside right top Left reverse\n");
}

ChartDef chart() {
  return {100, "timeline", "One training step per strategy (from --trace)", build};
}
TPB_REGISTER_CHART(chart);

}  // namespace
}  // namespace tpb::report
