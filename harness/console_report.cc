#include "harness/console_report.h"

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "common/format_bytes.h"
#include "common/text_escape.h"
#include "record/collective_summary.h"
#include "record/records.h"
#include "record/stats.h"
#include "record/stragglers.h"

namespace tpb {

void printProgress(const ProgressLine& line) {
  std::fprintf(stderr, "[%zu/%zu] %s", line.k, line.total, printable(line.what).c_str());
  if (line.elapsedS && line.etaS)
    std::fprintf(stderr, " (elapsed %.0f s, ETA %.0f s)", *line.elapsedS, *line.etaS);
  else if (line.elapsedS)
    std::fprintf(stderr, " (elapsed %.0f s)", *line.elapsedS);
  std::fprintf(stderr, "\n");
  // More ranks than cores here: they take turns, and a turn lost lands in the point's times.
  if (line.cores > 0 && line.ranks > 0 && static_cast<unsigned>(line.ranks) > line.cores)
    std::fprintf(stderr, "warning: %d ranks on %u available cores: they take turns, so this point's times "
                 "include waiting for one\n", line.ranks, line.cores);
}

void printOutputsWritten(const std::string& results, const std::string& trace, std::size_t tracePoints) {
  if (!results.empty()) std::fprintf(stderr, "results written to %s\n", results.c_str());
  if (tracePoints > 0)
    std::fprintf(stderr, "trace of %zu run(s) written to %s (open it in Perfetto or chrome://tracing)\n",
                 tracePoints, trace.c_str());
}

// ---- run and sweep ----------------------------------------------------------------------------

void TrainConsole::pointFailed(const std::string& strategy, int n, const std::string& error) const {
  std::fprintf(stderr, "%s N=%d failed: %s\n", strategy.c_str(), n, printable(error).c_str());
}

void TrainConsole::nodeOk(const std::string& strategy, int n, int batch, int node, int perNode,
                          double wallS) const {
  std::printf("%s N=%d batch %d: node %d (ranks %d..%d) ok, %.2f s\n", strategy.c_str(), n, batch, node,
              node * perNode, (node + 1) * perNode - 1, wallS);
  std::fflush(stdout);
}

std::string TrainConsole::detailOf(const TrainRow& r) const {
  bool show = false;
  double bucket = -1;
  for (const TrainRow& o : rows_) {
    show = show || o.workload != "mlp";
    if (o.bucketMb >= 0) {
      show = show || (bucket >= 0 && o.bucketMb != bucket);
      bucket = o.bucketMb;
    }
  }
  if (!show) return "";
  char mb[32] = "";
  if (r.bucketMb >= 0) std::snprintf(mb, sizeof mb, " bucket %g MiB", r.bucketMb);
  return "  " + r.workload + mb;
}

void TrainConsole::printTable() const {
  if (rows_.empty()) return;
  std::printf("\n# %-16s %4s %6s %10s %8s %12s %9s %9s%s\n", "strategy", "N", "batch", "train_size", "status",
              "samples/s", "test_acc", "train_s", detailOf(rows_[0]).empty() ? "" : "  workload");
  for (std::size_t i = 0; i < rows_.size(); ++i) {
    printRow(rows_[i]);
    printMedianAfter(i);
  }
  // Why points were skipped, one line per reason: "# skipped 14 of 80 points (single): runs one device".
  std::vector<std::pair<std::string, std::vector<const TrainRow*>>> reasons;
  for (const TrainRow& r : rows_) {
    if (r.status != "skipped") continue;
    auto it = std::find_if(reasons.begin(), reasons.end(), [&](const auto& x) { return x.first == r.why; });
    if (it == reasons.end()) it = reasons.insert(reasons.end(), {r.why, {}});
    it->second.push_back(&r);
  }
  for (const auto& [why, rows] : reasons) {
    std::vector<std::string> names;
    for (const TrainRow* r : rows)
      if (std::find(names.begin(), names.end(), r->strategy) == names.end()) names.push_back(r->strategy);
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    std::printf("# skipped %zu of %zu points (%s): %s\n", rows.size(), rows_.size(), list.c_str(),
                why.empty() ? "no reason recorded" : printable(why).c_str());
  }
}

void TrainConsole::printRow(const TrainRow& r, const char* note) const {
  if (r.status == "skipped") {
    std::printf("  %-16s %4d %6d %10zu %8s %12s %9s %9s%s\n", r.strategy.c_str(), r.n, r.batch, r.trainSize,
                "skipped", "-", "-", "-", printable(detailOf(r)).c_str());
    return;
  }
  char acc[16] = "n/a";
  if (r.testAccuracy >= 0) std::snprintf(acc, sizeof acc, "%.2f%%", r.testAccuracy * 100);
  // A busy machine besides: it may explain a straggler or a core wait, and its timings are not the point's.
  const std::string busy = *note || r.busy.empty() ? "" : "  ! busy: " + r.busy + "; its timings are marked";
  const std::string straggler = *note                 ? ""
                                : !r.straggler.empty() ? "  ! straggler: " + r.straggler
                                : !r.coreWait.empty()  ? "  ! core wait: " + r.coreWait
                                                       : "";
  // A big preset on the CPU trains under one sample a second: 3 significant digits below 100.
  char rate[32];
  std::snprintf(rate, sizeof rate, r.samplesPerS < 100 ? "%.3g" : "%.0f", r.samplesPerS);
  const char* saved = r.saved ? "  (from the file: --resume)" : "";
  std::printf("  %-16s %4d %6d %10zu %8s %12s %9s %9.2f%s%s%s%s%s\n", r.strategy.c_str(), r.n, r.batch, r.trainSize,
              r.status.c_str(), rate, acc, r.trainS, printable(detailOf(r)).c_str(), note, saved, straggler.c_str(),
              busy.c_str());
}

void TrainConsole::printMedianAfter(std::size_t i) const {
  const TrainRow& last = rows_[i];
  if (last.status != "ok" || last.point.empty()) return;
  std::vector<const TrainRow*> reps;
  for (std::size_t j = 0; j < rows_.size(); ++j) {
    if (rows_[j].status == "ok" && rows_[j].point == last.point) {
      if (j > i) return;  // a later repeat closes the group
      reps.push_back(&rows_[j]);
    }
  }
  if (reps.size() < 2) return;
  std::vector<double> sps, acc, secs;
  for (const TrainRow* r : reps) {
    sps.push_back(r->samplesPerS), secs.push_back(r->trainS);
    if (r->testAccuracy >= 0) acc.push_back(r->testAccuracy);
  }
  const Summary rate = summarize(sps);
  TrainRow m = last;
  m.status = "median";
  m.samplesPerS = rate.median;
  m.testAccuracy = acc.empty() ? -1.0 : summarize(acc).median;
  m.trainS = summarize(secs).median;
  char note[96];
  std::snprintf(note, sizeof note, "  (samples/s min-max %.0f-%.0f, %zu repeats)", rate.min, rate.max, reps.size());
  printRow(m, note);
}

void TrainConsole::interrupted(const std::string& out, bool resumable) const {
  if (out.empty()) {
    std::fprintf(stderr, "interrupted (no --out: nothing was saved)\n");
    return;
  }
  std::fprintf(stderr, "interrupted: the finished points are saved in %s, the interrupted one as failed%s\n",
               printable(out).c_str(),
               resumable ? "; the same command with --resume runs the missing and failed points" : "");
}

void TrainConsole::lostNodeZero(const std::string& why, int node) const {
  std::fprintf(stderr, "error: %s; node %d stops its sweep here\n", printable(why).c_str(), node);
}

// ---- allreduce and collective -----------------------------------------------------------------

void CollectiveConsole::header(const CollectiveHeader& h) const {
  char line[256];
  // A library with a carrier of its own uses the run's transport for the barriers only.
  const std::string over = h.carrier == h.transport ? "transport=" + h.transport
                                                    : "over=" + h.carrier + "  transport=" + h.transport + " (barriers only)";
  std::cout << "\n# " << h.op << "  algo=" << h.algo << "  N=" << h.n << "  " << over << "  device=" << h.device
            << "  (float32" << h.how << ")\n";
  std::snprintf(line, sizeof line, "# %10s %11s %5s %11s %11s %11s %11s %11s %11s %7s %12s\n", "bytes", "count",
                "place", "median_us", "p99_us", "min_us", "max_us", "algbw_GB/s", "busbw_GB/s", "#wrong", "sent_B/rank");
  std::cout << line;
}

namespace {
// What a reader of the row should not miss: iterations far above the median, a first timed
// iteration that paid for something the warm-up did not (a cold cache, a lazy connection), and a
// rank that held most iterations back (record/stragglers.h).
std::string spreadNote(const CollectiveRecord& p) {
  if (!p.spread || !(p.timeMedianUs > 0)) return "";
  std::string note;
  char buf[96];
  if (p.spread->spikes > 0) {
    std::snprintf(buf, sizeof buf, "%lld of %d over %.1fx the median", p.spread->spikes, p.iters, kSpikeFactor);
    note += buf;
  }
  if (p.spread->firstUs > kSpikeFactor * p.timeMedianUs) {
    std::snprintf(buf, sizeof buf, "%sfirst %.1fx the median", note.empty() ? "" : "; ", p.spread->firstUs / p.timeMedianUs);
    note += buf;
  }
  if (const auto st = stragglerOf(p)) note += (note.empty() ? "" : "; ") + stragglerText(*st);
  return note.empty() ? "" : "  ! " + note;
}
}  // namespace

void CollectiveConsole::row(const CollectiveRecord& p) const {
  if (!p.measured) {
    std::cout << "  " << formatBytes(p.bytes) << "  FAILED: " << printable(*p.error) << "\n";
    return;
  }
  char line[256];
  const std::string wrong = p.wrong ? std::to_string(*p.wrong) : "n/a";
  // The most any rank sent in one call (exact; "-" where the transport did not carry it).
  std::string sent = "-";
  if (p.traffic && p.traffic->ranks())
    sent = std::to_string(*std::max_element(p.traffic->bytesSent.begin(), p.traffic->bytesSent.end()));
  char p99[32] = "-";  // a mean of queued launches has no distribution
  if (p.spread) std::snprintf(p99, sizeof p99, "%.2f", p.spread->p99Us);
  std::snprintf(line, sizeof line, "  %10s %11llu %5s %11.2f %11s %11.2f %11.2f %11.3f %11.3f %7s %12s",
                formatBytes(p.bytes).c_str(), static_cast<unsigned long long>(p.count), p.isInPlace() ? "in" : "out",
                p.timeMedianUs, p99, p.timeMinUs, p.timeMaxUs, p.algbwGbps, p.busbwGbps, wrong.c_str(), sent.c_str());
  std::cout << line << spreadNote(p) << "\n";
}

void CollectiveConsole::endPoint() const { std::cout.flush(); }

namespace {

std::string placeText(bool inPlace) { return inPlace ? "in place" : "out of place"; }

// The width of the winner column: the longest "a ≈ b" of the table (≈ is one column wide).
std::size_t winnerWidth(const SummaryTable& t) {
  std::size_t w = 6;
  for (const auto& r : t.rows) w = std::max(w, winnerText(t, r).size() - (r.withinNoise && !r.busy ? 2 : 0));
  return w;
}

void summaryTable(const SummaryTable& t) {
  std::cout << "\n# " << printable(t.op) << " at a glance (" << printable(t.device) << ", " << placeText(t.inPlace)
            << "): the fastest per N and size by median time, each algorithm's median time over its;\n"
            << "# a \u2248 b: b's min-max range overlaps a's, so a's lead is within noise\n";
  const int ww = static_cast<int>(winnerWidth(t));
  std::printf("# %3s %8s  %-*s %11s", "N", "size", ww, "fastest", "busbw_GB/s");
  for (const auto& c : t.columns) std::printf(" %*s", static_cast<int>(std::max<std::size_t>(8, c.size())), printable(c).c_str());
  std::printf("\n");
  for (const auto& r : t.rows) {
    const std::string win = printable(winnerText(t, r));
    // printf pads by bytes: widen by the two extra bytes of a ≈.
    std::printf("  %3d %8s  %-*s %11.3f", r.n, formatBytes(r.bytes).c_str(), ww + (r.withinNoise && !r.busy ? 2 : 0), win.c_str(),
                r.cells[r.winner]->busbwGbps);
    for (std::size_t c = 0; c < t.columns.size(); ++c)
      std::printf(" %*s", static_cast<int>(std::max<std::size_t>(8, t.columns[c].size())), ratioText(r, c).c_str());
    std::printf("\n");
  }
}

}  // namespace

void CollectiveConsole::summary(const std::vector<SummaryTable>& tables) const {
  std::cout.flush();
  for (const auto& t : tables)
    if (t.columns.size() > 1) summaryTable(t);
  std::fflush(stdout);
}

void CollectiveConsole::pointFailed(const std::string& op, const std::string& algo, int n,
                                    const std::string& error) const {
  std::fprintf(stderr, "%s %s N=%d failed: %s\n", op.c_str(), algo.c_str(), n, printable(error).c_str());
}

void CollectiveConsole::againstReference(const std::string& text) const {
  std::cout << "# against published figures: " << printable(text) << "\n";
}

void CollectiveConsole::busy(const std::string& text) const {
  std::cout << "# ! busy: " << printable(text) << "; these timings are marked\n";
}

void CollectiveConsole::referenceHeader() const {
  std::cout << "\n# reference: single-thread memcpy on this host\n";
}

void CollectiveConsole::reference(std::size_t bytes, double gbps) const {
  char line[128];
  std::snprintf(line, sizeof line, "  memcpy %6s: %8.2f GB/s\n", formatBytes(bytes).c_str(), gbps);
  std::cout << line;
}

void CollectiveConsole::interrupted(std::size_t done, std::size_t total) const {
  std::fprintf(stderr, "interrupted: %zu of %zu points finished and saved\n", done, total);
}

void CollectiveConsole::failedPoints(std::size_t failed, std::size_t total) const {
  std::fprintf(stderr, "%zu of %zu points failed\n", failed, total);
}

}  // namespace tpb
