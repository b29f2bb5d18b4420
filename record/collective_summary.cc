// record/collective_summary.cc — see collective_summary.h.
#include "record/collective_summary.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

namespace tpb {

namespace {

double medianOf(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }), v.end());
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// The lowest (or highest) finite value; NaN when there is none.
double extremeOf(const std::vector<double>& v, bool lowest) {
  double out = NAN;
  for (double x : v)
    if (std::isfinite(x) && (!std::isfinite(out) || (lowest ? x < out : x > out))) out = x;
  return out;
}

Contender merged(const std::vector<const CollectiveTiming*>& repeats) {
  std::vector<double> med, lo, hi, bw;
  bool busy = false;
  for (const CollectiveTiming* p : repeats) {
    busy = busy || p->busy;
    med.push_back(p->medianUs);
    lo.push_back(p->minUs);
    hi.push_back(p->maxUs);
    bw.push_back(p->busbwGbps);
  }
  return {medianOf(med), extremeOf(lo, true), extremeOf(hi, false), medianOf(bw), busy};
}

using TableKey = std::tuple<std::string, std::string, bool>;  // op, device, placement

TableKey tableKeyOf(const CollectiveTiming& p) { return {p.op, p.device, p.inPlace}; }

// A table's column names: the algorithm, with its carrier where it ran over several.
std::vector<std::string> columnsOf(const std::vector<const CollectiveTiming*>& points,
                                   std::vector<std::size_t>& columnOfPoint) {
  std::map<std::string, std::set<std::string>> carriers;
  for (const CollectiveTiming* p : points) carriers[p->algo].insert(p->carrier);
  std::vector<std::string> columns;
  for (const CollectiveTiming* p : points) {
    const std::string name = carriers[p->algo].size() > 1 ? p->algo + " over " + p->carrier : p->algo;
    auto it = std::find(columns.begin(), columns.end(), name);
    columnOfPoint.push_back(static_cast<std::size_t>(it - columns.begin()));
    if (it == columns.end()) columns.push_back(name);
  }
  return columns;
}

// Ranks the row's cells by median time; the lead is within noise where the ranges overlap.
void rank(SummaryRow& row) {
  std::vector<std::size_t> order;
  for (std::size_t c = 0; c < row.cells.size(); ++c)
    if (row.cells[c] && std::isfinite(row.cells[c]->medianUs)) order.push_back(c);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return row.cells[a]->medianUs < row.cells[b]->medianUs; });
  if (order.empty()) return;
  for (std::size_t c : order) row.busy = row.busy || row.cells[c]->busy;
  row.winner = order[0];
  if (order.size() < 2) return;
  row.runnerUp = order[1];
  const Contender &w = *row.cells[order[0]], &r = *row.cells[order[1]];
  row.withinNoise = std::isfinite(w.maxUs) && std::isfinite(r.minUs) && w.maxUs >= r.minUs;
}

SummaryTable tableOf(const TableKey& key, const std::vector<const CollectiveTiming*>& points) {
  SummaryTable t;
  std::tie(t.op, t.device, t.inPlace) = key;
  std::vector<std::size_t> columnOf;
  t.columns = columnsOf(points, columnOf);
  std::map<std::pair<int, std::uint64_t>, std::vector<std::vector<const CollectiveTiming*>>> cells;
  for (std::size_t i = 0; i < points.size(); ++i) {
    auto& row = cells[{points[i]->n, points[i]->bytes}];
    row.resize(t.columns.size());
    row[columnOf[i]].push_back(points[i]);
  }
  for (const auto& [at, byColumn] : cells) {
    SummaryRow r;
    std::tie(r.n, r.bytes) = at;
    for (const auto& repeats : byColumn)
      r.cells.push_back(repeats.empty() ? std::nullopt : std::optional<Contender>(merged(repeats)));
    rank(r);
    if (r.cells[r.winner]) t.rows.push_back(std::move(r));
  }
  return t;
}

}  // namespace

std::optional<CollectiveTiming> timingOf(const CollectiveRecord& r) {
  if (!r.ok() || !r.measured || !std::isfinite(r.timeMedianUs)) return std::nullopt;
  return CollectiveTiming{r.op,          r.algo,        r.carriedOver(), r.device,
                          r.isInPlace(), r.nGpus,       r.bytes,         r.timeMedianUs,
                          r.timeMinUs,   r.timeMaxUs,   r.busbwGbps,     r.machine && r.machine->busy};
}

std::vector<SummaryTable> summaryTables(const std::vector<CollectiveTiming>& points) {
  std::vector<TableKey> order;
  std::map<TableKey, std::vector<const CollectiveTiming*>> byTable;
  for (const auto& p : points) {
    if (!std::isfinite(p.medianUs)) continue;
    auto& members = byTable[tableKeyOf(p)];
    if (members.empty()) order.push_back(tableKeyOf(p));
    members.push_back(&p);
  }
  std::vector<SummaryTable> tables;
  for (const auto& key : order) tables.push_back(tableOf(key, byTable[key]));
  return tables;
}

std::string winnerText(const SummaryTable& t, const SummaryRow& r) {
  // A machine that was busy beside a cell moved its time: no lead measured there is the code's.
  if (r.busy) return "none named (machine busy)";
  const std::string& w = t.columns.at(r.winner);
  return r.withinNoise ? w + " \u2248 " + t.columns.at(*r.runnerUp) : w;
}

std::string ratioText(const SummaryRow& r, std::size_t column) {
  const auto& c = r.cells.at(column);
  const double best = r.cells.at(r.winner)->medianUs;
  if (!c || !(best > 0)) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.2fx", c->medianUs / best);
  return b;
}

}  // namespace tpb
