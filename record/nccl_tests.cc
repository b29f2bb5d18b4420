// record/nccl_tests.cc — see nccl_tests.h.
#include "record/nccl_tests.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>
#include <unordered_set>

#include "common/bus_factor.h"
#include "common/error.h"
#include "common/regular_file.h"
#include "common/text_escape.h"
#include "record/results.h"
#include "record/stats.h"

namespace tpb {

namespace {

using nlohmann::json;

// The registry's look for these points: after the library entries, in a colour no entry uses.
constexpr int kOrder = 7;
constexpr const char* kColor = "#bcbd22";
// The timer of every imported point: nccl-tests launches `iters` calls back to back and divides.
constexpr const char* kMeanTimer = "nccl-tests (mean of back-to-back launches)";
constexpr const char* kPerIterTimer = "nccl-tests (CUDA events per iteration)";

std::string baseName(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// "22703" -> "2.27.3" (NCCL_VERSION_CODE since 2.9: major*10000 + minor*100 + patch; before:
// major*1000 + minor*100 + patch).
std::string ncclVersionText(long long code) {
  const long long major = code >= 10000 ? code / 10000 : code / 1000;
  const long long minor = code >= 10000 ? code % 10000 / 100 : code % 1000 / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

// A finite number >= 0, the whole token ("1.2e+05" as nccl-tests prints its widest values).
bool numberToken(const std::string& t, double& out) {
  if (t.empty() || t.size() > 32) return false;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || errno == ERANGE || !std::isfinite(v) || v < 0) return false;
  out = v;
  return true;
}

// Half a unit of the last digit printed: the most a printed figure is off from what was measured
// ("12.34": 0.005; "24410": 0.5; "1.2e+05": 5000).
// The largest algbw (size / time) a row may imply: 1 PB/s, far past any link (NVLink 5 carries
// 1.8 TB/s) and past a one-GPU "allreduce" that copies nothing.
constexpr double kMaxAlgbwGbps = 1e6;

double printedHalfUnit(const std::string& t) {
  const auto e = t.find_first_of("eE");
  const std::string mantissa = t.substr(0, e);
  const auto dot = mantissa.find('.');
  const int decimals = dot == std::string::npos ? 0 : static_cast<int>(mantissa.size() - dot - 1);
  const int exponent = e == std::string::npos ? 0 : std::atoi(t.c_str() + e + 1);
  return 0.5 * std::pow(10.0, exponent - decimals);
}

bool integerToken(const std::string& t, long long lo, long long hi, long long& out) {
  if (t.empty() || t.size() > 20) return false;
  std::size_t i = t[0] == '-' ? 1 : 0;
  if (i == t.size()) return false;
  for (std::size_t k = i; k < t.size(); ++k)
    if (t[k] < '0' || t[k] > '9') return false;
  errno = 0;
  const long long v = std::strtoll(t.c_str(), nullptr, 10);
  if (errno == ERANGE || v < lo || v > hi) return false;
  out = v;
  return true;
}

bool isInteger(const std::string& t) {
  long long v = 0;
  return integerToken(t, -(1LL << 53), 1LL << 53, v);
}

std::vector<std::string> tokens(const std::string& line) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

// nccl-tests' (and rccl-tests') element type names, in tpbench's; "" for another word.
std::string elementTypeOf(const std::string& t) {
  static const std::map<std::string, std::string> names = {
      {"int8", "int8"},       {"char", "int8"},       {"uint8", "uint8"},         {"int32", "int32"},
      {"int", "int32"},       {"uint32", "uint32"},   {"int64", "int64"},         {"uint64", "uint64"},
      {"half", "float16"},    {"float16", "float16"}, {"float", "float32"},       {"float32", "float32"},
      {"double", "float64"},  {"float64", "float64"}, {"bfloat16", "bfloat16"},   {"bf16", "bfloat16"},
      {"f8e4m3", "float8_e4m3"}, {"fp8_e4m3", "float8_e4m3"}, {"f8e5m2", "float8_e5m2"}, {"fp8_e5m2", "float8_e5m2"}};
  const auto it = names.find(t);
  return it == names.end() ? "" : it->second;
}

// nccl-tests' reduction names in tpbench's ("none" for the ops that reduce nothing); "" for another.
std::string reductionOf(const std::string& t) {
  if (t == "none") return "none";
  if (t == "mulsum" || t == "premulsum") return "premulsum";
  return isReduction(t) ? t : "";
}

bool reducingOp(const std::string& op) { return op == "allreduce" || op == "reduce" || op == "reduce_scatter"; }
bool rootedOp(const std::string& op) { return op == "broadcast" || op == "reduce"; }

// The ops a table may be of, for a guess from its figures, in ncclTestsOps()' order.
const std::vector<std::string>& candidateOps() {
  static const std::vector<std::string> ops = {"allreduce", "allgather", "reduce_scatter", "broadcast",
                                               "reduce",    "alltoall",  kShiftOp};
  return ops;
}

// Rows left out, by reason, counted for the one line each the command prints.
class LeftOut {
 public:
  void add(const std::string& why, long long n = 1) { counts_[why] += n; }
  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    for (const auto& [why, n] : counts_) out.push_back(std::to_string(n) + (n == 1 ? " row " : " rows ") + why);
    return out;
  }

 private:
  std::map<std::string, long long> counts_;
};

// What a test's header says, and where each thing was learnt.
struct Test {
  std::string op, opFrom;
  std::string program;      // the program named, for a left-out line ("gather_perf")
  std::string unsupported;  // why its rows are left out ("" : they are read)
  long long iters = 0, warmup = 0;
  bool haveIters = false;
  int ranks = 0;
  std::string ranksFrom;
  bool validation = true;
  std::string algorithm;  // NCCL_ALGO where the log set it
  int commandRanks = 0;   // what its command line runs (ranksOfCommand)
  std::vector<std::pair<std::string, std::string>> devices;  // host, GPU of each rank
};

// One placement's figures as the file gives them, with each printed figure's token (for its
// precision) where it came from text.
struct Measured {
  double timeUs = NAN, algbw = NAN, busbw = NAN;
  double timeTol = 0, algbwTol = 0, busbwTol = 0;  // half a printed unit; 0 from JSON
  std::optional<long long> wrong;  // nullopt: validation off ("N/A" / null), or an "error" column
  std::optional<double> maxError;  // older tables' "error" column: the largest error, not a count
  // Per-iteration figures where the file has them (-I): text gives min, max, p99 and cv; JSON
  // the times themselves.
  double minUs = NAN, maxUs = NAN, p99Us = NAN, cvPct = NAN;
  std::vector<double> timesUs;
  long long skipped = 0;
};

// One row as read: its preamble and one or two placements.
struct Row {
  std::string where;  // "file:line"
  long long bytes = 0, count = 0;
  std::string dtype = "float32", redop;  // redop "" : the table has no redop column
  std::optional<long long> root;         // absent: no root column
  std::optional<Measured> outOfPlace;
  Measured inPlace;
};

bool near(double printed, double tol, double expected, double expectedTol) {
  // What was printed is within its own rounding, and that of the figures it is computed from, of
  // what they give; a little more for float arithmetic and for printf's rounding of ties.
  // (The float slack is relative to the smaller of the two: to the larger, an absurd expected
  // value, from a time of 1e-300, would excuse any printed one.)
  return std::fabs(printed - expected) <= tol + expectedTol + 1e-6 * std::min(printed, expected) + 1e-9;
}

// nccl-tests before 2.? printed allgather's and reduce_scatter's algbw as what crosses the links,
// size x (N-1)/N / time, equal to their busbw (which is today's busbw): such a row's figures.
bool oldBlockFigures(const std::string& op, int ranks, long long bytes, const Measured& m) {
  if ((op != "allgather" && op != "reduce_scatter") || ranks < 2 || !(m.timeUs > 0)) return false;
  const double bus = static_cast<double>(bytes) * (ranks - 1) / ranks / (m.timeUs * 1e3);
  const double busTol = m.timeTol > 0 && m.timeTol < m.timeUs ? bus * m.timeTol / (m.timeUs - m.timeTol) : 0.01 * bus;
  return near(m.algbw, m.algbwTol, bus, busTol) && near(m.busbw, m.busbwTol, bus, busTol);
}

std::string todaysFiguresMisfit(const std::string& op, int ranks, long long bytes, const Measured& m);

// Why a row's figures do not fit `op` at `ranks` ("" when they do): algbw = size / time, busbw =
// algbw x the factor, each at the precision printed.
std::string figuresMisfit(const std::string& op, int ranks, long long bytes, const Measured& m) {
  if (!(m.timeUs > 0)) return "time must be a number > 0";
  // No link moves a petabyte a second: a time that says so is no measurement (and its algbw
  // would be written as infinity, which no reader takes).
  if (static_cast<double>(bytes) / (m.timeUs * 1e3) > kMaxAlgbwGbps) {
    std::ostringstream why;
    why << "time " << m.timeUs << " us for " << bytes << " bytes is over " << kMaxAlgbwGbps
        << " GB/s: not a measurement";
    return why.str();
  }
  const std::string why = todaysFiguresMisfit(op, ranks, bytes, m);
  return why.empty() || oldBlockFigures(op, ranks, bytes, m) ? "" : why;
}

std::string todaysFiguresMisfit(const std::string& op, int ranks, long long bytes, const Measured& m) {
  const double algbw = static_cast<double>(bytes) / (m.timeUs * 1e3);
  const double algbwTol = m.timeTol > 0 && m.timeTol < m.timeUs ? algbw * m.timeTol / (m.timeUs - m.timeTol) : 0;
  std::ostringstream why;
  if (!near(m.algbw, m.algbwTol, algbw, algbwTol + (m.algbwTol == 0 ? 0.01 * algbw : 0))) {
    why << "algbw " << m.algbw << " GB/s is not size / time (" << algbw << " GB/s)";
    return why.str();
  }
  const double factor = busFactorOf(op)(ranks);
  if (!near(m.busbw, m.busbwTol, m.algbw * factor, factor * m.algbwTol + (m.busbwTol == 0 ? 0.01 * m.busbw : 0))) {
    why << "busbw " << m.busbw << " GB/s is not algbw x " << factor << " (" << op << " at " << ranks << " ranks)";
    return why.str();
  }
  return "";
}

// Why a row cannot be of `op` by its redop and root columns ("" when it can).
std::string columnsMisfit(const std::string& op, const Row& r) {
  if (!r.redop.empty()) {
    // Older versions print "sum" for the tests that reduce nothing too; none never reduces.
    if (reducingOp(op) && r.redop == "none") return "its redop is none, and " + op + " reduces";
    if (!reducingOp(op) && r.redop != "none" && r.redop != "sum")
      return "its redop is " + r.redop + ", and " + op + " reduces nothing";
  }
  if (r.root) {
    if (rootedOp(op) && *r.root < 0) return "its root is " + std::to_string(*r.root) + ", and " + op + " has a root";
    if (!rootedOp(op) && *r.root >= 0) return "its root is " + std::to_string(*r.root) + ", and " + op + " has none";
  }
  // nccl-tests checks no in-place result of alltoall and sendrecv (#wrong N/A beside an
  // out-of-place count), and every other test's.
  if (r.outOfPlace && r.outOfPlace->wrong) {
    const bool unchecked = !r.inPlace.wrong && !r.inPlace.maxError;
    const bool uncheckedOp = op == "alltoall" || op == kShiftOp;
    if (unchecked && !uncheckedOp) return "its in-place result is unchecked (N/A), as only alltoall's and sendrecv's are";
    if (!unchecked && uncheckedOp) return "its in-place result is checked, as " + op + "'s is not";
  }
  return "";
}

// Where a point ran, by the library that ran it: nccl-tests on CUDA, rccl-tests on ROCm.
void setLibrary(CollectiveRecord& r, const std::string& library) {
  const bool rccl = library == "rccl";
  r.algo = rccl ? kRcclTestsOrigin : kNcclTestsOrigin;
  r.entry.origin = r.algo;
  r.transport = library;
  r.entry.carrier = library;
  r.device = rccl ? "rocm" : "cuda";
}

// The record of one placement of one row (figures checked by the caller).
CollectiveRecord record(const Test& t, const std::string& library, const Row& row, bool inPlace, const Measured& m,
                        const std::string& where) {
  const auto refuse = [&](const std::string& why) { TPB_THROW(UsageError, where << ": " << why); };
  CollectiveRecord r;
  r.op = t.op;
  setLibrary(r, library);
  if (rootedOp(t.op)) r.root = static_cast<int>(row.root.value_or(0));
  r.inPlace = inPlace;
  if (row.dtype != "float32") r.dtype = row.dtype;
  if (reducingOp(t.op) && !row.redop.empty() && row.redop != "sum") r.redop = row.redop;
  r.nGpus = t.ranks;
  r.bytes = static_cast<std::uint64_t>(row.bytes);
  r.count = static_cast<std::uint64_t>(row.count);
  r.measured = true;
  r.timing = kBackToBackTiming;
  r.iters = static_cast<int>(t.iters);
  r.warmup = static_cast<int>(t.warmup);
  r.wrong = t.validation ? m.wrong : std::nullopt;
  if (m.maxError) r.extra["max_error"] = *m.maxError;
  r.entry.order = kOrder;
  r.entry.color = kColor;
  if (!t.algorithm.empty()) r.extra["nccl_algo"] = t.algorithm;
  const double factor = busFactorOf(t.op)(t.ranks);
  if (!m.timesUs.empty()) {
    // Each iteration timed (-I): the distribution, as tpbench's own points keep it, and the
    // bandwidths of its median, which one slow iteration does not move.
    std::vector<double> kept(m.timesUs.begin() + std::min<std::size_t>(m.skipped, m.timesUs.size() - 1), m.timesUs.end());
    const Summary s = summarize(kept);
    if (!(s.median > 0)) refuse("per-iteration times must be > 0");
    r.timer = kPerIterTimer;
    r.timeMedianUs = s.median;
    r.timeMinUs = s.min;
    r.timeMaxUs = s.max;
    r.algbwGbps = static_cast<double>(row.bytes) / (s.median * 1e3);
    r.busbwGbps = r.algbwGbps * factor;
    if (kept.size() >= 2) r.spread = IterationSpread::of(kept, s);
    r.timeExtra["mean_launch"] = m.timeUs;
    r.iters = static_cast<int>(kept.size());
    return r;
  }
  r.timer = kMeanTimer;
  r.timeMedianUs = r.timeMinUs = r.timeMaxUs = m.timeUs;
  if (std::isfinite(m.minUs) && std::isfinite(m.maxUs)) {
    // The text table's per-iteration columns: the range around the mean, and p99 and CV kept as
    // the file gives them (no median or p90 to make tpbench's spread of).
    if (!(m.minUs <= m.timeUs + m.timeTol && m.timeUs - m.timeTol <= m.maxUs))
      refuse("the mean time lies outside i_min .. i_max");
    r.timer = kPerIterTimer;
    r.timeMinUs = std::min(m.minUs, m.timeUs);
    r.timeMaxUs = std::max(m.maxUs, m.timeUs);
    r.timeExtra["mean_launch"] = m.timeUs;
    if (std::isfinite(m.p99Us)) r.timeExtra["nccl_tests_p99"] = m.p99Us;
    if (std::isfinite(m.cvPct)) r.timeExtra["nccl_tests_cv"] = m.cvPct / 100;
  }
  r.algbwGbps = m.algbw;
  r.busbwGbps = m.busbw;
  if (!todaysFiguresMisfit(t.op, t.ranks, row.bytes, m).empty() && oldBlockFigures(t.op, t.ranks, row.bytes, m)) {
    // One meaning per figure: algbw is size / time here as in every other record.
    r.extra["nccl_tests_algbw"] = m.algbw;
    r.algbwGbps = static_cast<double>(row.bytes) / (m.timeUs * 1e3);
  }
  return r;
}

// The test a program runs, or why tpbench cannot hold its rows.
void testOf(const std::string& program, Test& t) {
  t.program = printableLine(baseName(program)).substr(0, 64);
  t.op = opOfNcclTestsProgram(program);
  if (t.op.empty())
    t.unsupported = "of " + t.program +
                    " (tpbench has no such op: it holds all_reduce, all_gather, reduce_scatter, broadcast, reduce, "
                    "alltoall and sendrecv)";
}

// Where the file's ranks ran: the first test that has rows names them.
// The test's hosts, each once, in rank order (a set: 65536 Rank lines stay linear).
std::vector<std::string> distinctHosts(const Test& t) {
  std::vector<std::string> hosts;
  std::unordered_set<std::string> seen;
  for (const auto& d : t.devices)
    if (seen.insert(d.first).second) hosts.push_back(d.first);
  return hosts;
}

void noteDevices(Meta& meta, const Test& t) {
  if (meta.worldSize) return;
  meta.worldSize = t.ranks;
  meta.hosts = distinctHosts(t);
  meta.gpus.emplace();
  for (const auto& d : t.devices) meta.gpus->push_back(d.second);
  if (!meta.hosts->empty()) meta.host = meta.hosts->front();
}

void finish(NcclTestsImport& out, const LeftOut& left, const std::string& file) {
  out.leftOut = left.lines();
  if (out.meta.hosts && !out.meta.hosts->empty()) out.meta.nodes = static_cast<long long>(out.meta.hosts->size());
  if (out.points.empty())
    TPB_THROW(UsageError, file << ": no nccl-tests result row tpbench can hold"
                               << (out.leftOut.empty() ? "" : " (" + out.leftOut.front() + ")"));
}

// ---- text ----------------------------------------------------------------------------------

// A line as nccl-tests printed it: what launchers and pastes put around it taken off. Open MPI's
// --tag-output ("[1,0]<stdout>:") and a rank tag ("[0]") recur inside a line where a rank's output
// was written in pieces, so every copy of the line's leading tag goes; srun's --label ("0: ")
// leads only. Then indentation and markdown's quote marks.
std::string cleaned(const std::string& raw) {
  std::string line = raw;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  std::size_t i = line.find_first_not_of(" \t");
  if (i == std::string::npos) return "";
  // [r,s]<stdout>: or [r,s]<stderr>: (Open MPI), [r] (a rank tag), each anywhere once it leads.
  const auto tagAt = [&](std::size_t at) -> std::size_t {
    if (at >= line.size() || line[at] != '[') return 0;
    std::size_t k = at + 1, digits = 0;
    while (k < line.size() && line[k] >= '0' && line[k] <= '9' && digits < 7) ++k, ++digits;
    if (digits == 0 || k >= line.size()) return 0;
    if (line[k] == ']') return k + 1 - at;
    if (line[k] != ',') return 0;
    ++k;
    digits = 0;
    while (k < line.size() && line[k] >= '0' && line[k] <= '9' && digits < 7) ++k, ++digits;
    if (digits == 0 || k >= line.size() || line[k] != ']') return 0;
    ++k;
    for (const char* stream : {"<stdout>:", "<stderr>:", "<stddiag>:"})
      if (line.compare(k, std::char_traits<char>::length(stream), stream) == 0)
        return k + std::char_traits<char>::length(stream) - at;
    return 0;
  };
  // A tag after another launcher's prefix ("(head, rank=0, pid=3808) [1,0]<stdout>:"): what stands
  // before the tag goes with it.
  for (std::size_t at = line.find('[', i); at != std::string::npos && !tagAt(i); at = line.find('[', at + 1)) {
    const std::size_t n = tagAt(at);
    if (n > 0 && line[at + n - 1] == ':') {
      i = at;
      break;
    }
  }
  if (const std::size_t n = tagAt(i)) {
    const std::string tag = line.substr(i, n);
    std::string out;
    for (std::size_t k = i; k < line.size();) {
      if (line.compare(k, tag.size(), tag) == 0) {
        out += ' ';
        k += tag.size();
      } else {
        out += line[k++];
      }
    }
    line = out;
    i = line.find_first_not_of(" \t");
    if (i == std::string::npos) return "";
  } else {
    // srun --label: "12: " before the line.
    std::size_t k = i;
    while (k < line.size() && k - i < 7 && line[k] >= '0' && line[k] <= '9') ++k;
    if (k > i && k + 1 < line.size() && line[k] == ':' && (line[k + 1] == ' ' || line[k + 1] == '\t'))
      i = line.find_first_not_of(" \t", k + 1);
    if (i == std::string::npos) return "";
  }
  // Markdown's quote marks ("> ") and the indentation of a list; a table pasted as a markdown
  // table ("1024 | 512 | half | sum ...", "\#  size ...") read as the columns it was.
  while (i < line.size() && (line[i] == '>' || line[i] == ' ' || line[i] == '\t')) ++i;
  std::string out = line.substr(i);
  if (out.size() >= 2 && out[0] == '\\' && out[1] == '#') out.erase(0, 1);
  if (out.find(" | ") != std::string::npos) std::replace(out.begin(), out.end(), '|', ' ');
  return out;
}

// The table's columns, from its header line "#  size  count  type  redop  root  time  algbw ...",
// or told from a row where the log starts below the header.
struct Columns {
  std::vector<std::string> preamble;  // size, count, type, redop, root (older tables: fewer)
  std::size_t perPlacement = 4;       // time algbw busbw #wrong, + i_min i_max i_p99 i_cv% with -I
  bool perIter = false, timestamp = false, errorColumn = false;
  std::size_t placements = 2;         // the header's time columns: 1 where a test has no in-place
  double timeScale = 1;               // to µs: 1000 where the table printed ms
};

bool columnsOf(const std::vector<std::string>& t, Columns& c) {
  if (t.empty() || (t[0] != "size" && t[0] != "bytes")) return false;
  // The first generation (2017-2019): "bytes N type op time algbw busbw res", its time in ms, its
  // op the reduction and res the largest error.
  const bool first = t[0] == "bytes";
  if (first) c.timeScale = 1000;
  std::size_t i = 0;
  while (i < t.size() && t[i] != "time" && t[i] != "cputime") {
    const std::string& name = t[i++];
    c.preamble.push_back(!first ? name : name == "bytes" ? "size" : name == "N" ? "count" : name == "op" ? "redop" : name);
  }
  std::size_t groups = 0;
  for (; i < t.size(); ++i) {
    if (t[i] == "time" || t[i] == "cputime") ++groups;
    else if (t[i] == "i_min") c.perIter = true;
    else if (t[i] == "timestamp") c.timestamp = true;
    else if (t[i] == "error" || t[i] == "res") c.errorColumn = true;
  }
  c.perPlacement = c.perIter ? 8 : 4;
  c.placements = std::min<std::size_t>(groups, 2);
  return groups >= 1 && c.preamble.size() >= 2;
}

// A row's columns where no header was read: size, count and type, then a redop word and a root
// where the count of the rest fits one or two placements of four figures (eight with -I). A time
// may be printed as an integer ("24410"), so a root is taken only where the rest's count says so.
std::optional<Columns> columnsFromRow(const std::vector<std::string>& t) {
  if (t.size() < 3 + 4 || elementTypeOf(t[2]).empty()) return std::nullopt;
  Columns c;
  c.preamble = {"size", "count", "type"};
  std::size_t k = 3;
  if (!reductionOf(t[k]).empty()) c.preamble.push_back("redop"), ++k;
  const auto fits = [&c](std::size_t left) {
    if (left == 8) return c.perPlacement = 4, c.placements = 2, true;
    if (left == 4) return c.perPlacement = 4, c.placements = 1, true;
    if (left == 16) return c.perPlacement = 8, c.perIter = true, c.placements = 2, true;
    return false;
  };
  if (k < t.size() && isInteger(t[k]) && fits(t.size() - k - 1)) {
    c.preamble.push_back("root");
    return c;
  }
  if (fits(t.size() - k)) return c;
  return std::nullopt;
}

long long headerNumber(const std::vector<std::string>& t, const std::string& key, const std::string& where) {
  // "warmup iters: 5 iters: 20 agg iters: 1 validation: 1": the count after `key`'s words.
  const auto words = tokens(key);
  for (std::size_t i = 0; i + words.size() < t.size(); ++i) {
    if (!std::equal(words.begin(), words.end(), t.begin() + static_cast<long>(i))) continue;
    // "iters:" alone must not match the end of "warmup iters:" or "agg iters:".
    if (words.size() == 1 && i > 0 && (t[i - 1] == "warmup" || t[i - 1] == "agg")) continue;
    long long v = 0;
    if (!integerToken(t[i + words.size()], 0, 1LL << 31, v))
      TPB_THROW(UsageError, where << ": '" << key << "' is not followed by a count");
    return v;
  }
  return -1;
}

Measured placementOf(const std::vector<std::string>& t, std::size_t at, const Columns& c, const std::string& where) {
  Measured m;
  const auto num = [&](std::size_t k, const char* name, double* tol = nullptr) {
    double v = 0;
    if (!numberToken(t[at + k], v))
      TPB_THROW(UsageError, where << ": " << name << " '" << printableLine(t[at + k]) << "' is not a number >= 0");
    if (tol) *tol = printedHalfUnit(t[at + k]);
    return v;
  };
  m.timeUs = num(0, "time", &m.timeTol) * c.timeScale;
  m.timeTol *= c.timeScale;
  m.algbw = num(1, "algbw", &m.algbwTol);
  m.busbw = num(2, "busbw", &m.busbwTol);
  if (t[at + 3] != "N/A") {
    if (c.errorColumn) {
      // Tables before #wrong printed the largest error found ("0e+00", "2e-07"), not a count.
      m.maxError = num(3, "error");
    } else {  // printed with %g: "1.2e+07" for a large count
      const double wrong = num(3, "#wrong");
      if (wrong > static_cast<double>(kMaxCount) || wrong != std::floor(wrong))
        TPB_THROW(UsageError, where << ": #wrong '" << printableLine(t[at + 3]) << "' is not a count of elements");
      m.wrong = static_cast<long long>(wrong);
    }
  }
  if (c.perIter) {
    m.minUs = num(4, "i_min");
    m.maxUs = num(5, "i_max");
    m.p99Us = num(6, "i_p99");
    m.cvPct = num(7, "i_cv%");
  }
  return m;
}

// A row's tokens read by the columns; nullopt when it has fewer than they need (a cut row).
std::optional<Row> rowOf(const std::vector<std::string>& t, const Columns& columns, const std::string& where) {
  const std::size_t pre = columns.preamble.size(), per = columns.perPlacement;
  if (t.size() < pre + per * columns.placements) return std::nullopt;
  const std::size_t rest = t.size() - pre, slack = columns.timestamp ? 3 : 0;
  const bool both = columns.placements == 2;
  if (rest - per * columns.placements > slack)
    TPB_THROW(UsageError, where << ": " << t.size() << " columns, more than the table's " << pre + per * columns.placements);
  Row r;
  r.where = where;
  for (std::size_t k = 0; k < pre; ++k) {
    const std::string& name = columns.preamble[k];
    const std::string& v = t[k];
    if (name == "size" && !integerToken(v, 0, kMaxCount, r.bytes))
      TPB_THROW(UsageError, where << ": size '" << printableLine(v) << "' is not a byte count");
    if (name == "count" && !integerToken(v, 0, kMaxCount, r.count))
      TPB_THROW(UsageError, where << ": count '" << printableLine(v) << "' is not an element count");
    if (name == "type") {
      r.dtype = elementTypeOf(v);
      if (r.dtype.empty()) TPB_THROW(UsageError, where << ": type '" << printableLine(v) << "' is not an NCCL element type");
    }
    if (name == "redop") {
      r.redop = reductionOf(v);
      if (r.redop.empty()) TPB_THROW(UsageError, where << ": redop '" << printableLine(v) << "' is not an NCCL reduction");
    }
    long long root = 0;
    if (name == "root") {
      if (!integerToken(v, -1, kMaxRanks - 1, root))
        TPB_THROW(UsageError, where << ": root '" << printableLine(v) << "' is not a rank");
      r.root = root;
    }
  }
  if (both) r.outOfPlace = placementOf(t, pre, columns, where);
  r.inPlace = placementOf(t, both ? pre + per : pre, columns, where);
  return r;
}

// A program name in a pasted command line ("./build/all_gather_perf", "all_reduce_perf_mpi"):
// its op, and whether the line named one.
bool programIn(const std::vector<std::string>& t, std::string& program) {
  for (const auto& tok : t) {
    const std::string name = baseName(tok);
    const auto perf = name.find("_perf");
    if (perf == std::string::npos || perf == 0) continue;
    const std::string tail = name.substr(perf);
    if (tail != "_perf" && tail != "_perf_mpi") continue;
    if (!std::all_of(name.begin(), name.begin() + static_cast<long>(perf), [](char c) {
          return (c >= 'a' && c <= 'z') || c == '_';
        }))
      continue;
    program = name;
    return true;
  }
  return false;
}

// The rank count a pasted command line runs: its launcher's process count (mpirun -np N, srun
// -n N / --ntasks=N; one process without a launcher) x nccl-tests' -g and -t. 0 where a launcher
// is named without its count (a hostfile decides it).
int ranksOfCommand(const std::vector<std::string>& t) {
  long long procs = 1, gpus = 1, threads = 1;
  bool launcher = false, counted = false;
  const auto value = [&](std::size_t i, const std::string& flag, long long& out) {
    long long v = 0;
    if (t[i] == flag && i + 1 < t.size() && integerToken(t[i + 1], 1, kMaxRanks, v)) return out = v, true;
    if (t[i].rfind(flag + "=", 0) == 0 && integerToken(t[i].substr(flag.size() + 1), 1, kMaxRanks, v)) return out = v, true;
    return false;
  };
  for (std::size_t i = 0; i < t.size(); ++i) {
    const std::string name = baseName(t[i]);
    if (name == "mpirun" || name == "mpiexec" || name == "srun" || name == "orterun") launcher = true;
    if (launcher && !counted)
      counted = value(i, "-np", procs) || value(i, "--np", procs) || value(i, "-n", procs) || value(i, "--ntasks", procs);
    value(i, "-g", gpus) || value(i, "--ngpus", gpus);
    value(i, "-t", threads) || value(i, "--nthreads", threads);
  }
  if (launcher && !counted) return 0;
  const long long n = procs * gpus * threads;
  return n <= kMaxRanks ? static_cast<int>(n) : 0;
}

// What a log says about itself outside its tables.
struct LogFacts {
  std::string library = "nccl";
  bool libraryGiven = false;  // --library: what the log says is not applied
  std::string nccl;              // the library's version, from the version line or NCCL's INFO
  int nicsPerNode = 0;           // NCCL's "NET/IB : Using [0]mlx5_0:1/IB [1]..." where it says it
};

void noteInfoLine(const std::string& line, LogFacts& f) {
  for (const char* lib : {"NCCL version ", "RCCL version "}) {
    const auto at = line.find(lib);
    if (at == std::string::npos) continue;
    if (lib[0] == 'R' && !f.libraryGiven) f.library = "rccl";
    if (f.nccl.empty()) {
      auto t = tokens(line.substr(at + 13, 64));
      if (!t.empty() && t[0] == ":") t.erase(t.begin());  // rccl-tests' "RCCL version : 2.18.3+hip6.1 ..."
      if (!t.empty() && std::isdigit(static_cast<unsigned char>(t[0][0])))
        f.nccl = printableLine(t[0].substr(0, t[0].find('+'))).substr(0, 32);
    }
  }
  const auto net = line.find("NET/IB : Using");
  if (net != std::string::npos) {
    int n = 0;
    for (const auto& tok : tokens(line.substr(net)))
      if (tok.size() > 2 && tok[0] == '[' && std::isdigit(static_cast<unsigned char>(tok[1]))) ++n;
    f.nicsPerNode = std::max(f.nicsPerNode, n);
  }
}

// The rank count from busbw / algbw where the op's factor tells it (allreduce 2(N-1)/N, the
// block ops (N-1)/N): the one count every row fits. 0 where none does, where the factor cannot tell
// it (1 for every N) or where the printed figures fit several counts (`ambiguous`).
int ranksByFigures(const std::string& op, const std::vector<Row>& rows, bool& ambiguous) {
  ambiguous = false;
  const Measured* best = nullptr;
  for (const auto& r : rows)
    if (!best || r.inPlace.algbw > best->algbw) best = &r.inPlace;
  if (!best || !(best->algbw > 0)) return 0;
  const double ratio = best->busbw / best->algbw;
  double n = 0;
  if (op == "allreduce" && ratio < 2) n = 2 / (2 - ratio);
  if ((op == "allgather" || op == "reduce_scatter" || op == "alltoall") && ratio < 1) n = 1 / (1 - ratio);
  if (!(n >= 1.5) || n > kMaxRanks) return 0;
  const long long guess = std::llround(n);
  std::vector<int> fit;
  for (long long k = std::max(2LL, guess - 3); k <= std::min<long long>(kMaxRanks, guess + 3); ++k) {
    bool ok = true;
    for (const auto& r : rows)
      if (!figuresMisfit(op, static_cast<int>(k), r.bytes, r.inPlace).empty() ||
          (r.outOfPlace && !figuresMisfit(op, static_cast<int>(k), r.bytes, *r.outOfPlace).empty())) {
        ok = false;
        break;
      }
    if (ok) fit.push_back(static_cast<int>(k));
  }
  if (fit.size() > 1) ambiguous = true;
  return fit.size() == 1 ? fit.front() : 0;
}

bool everyRowFits(const std::string& op, int ranks, const std::vector<Row>& rows) {
  for (const auto& r : rows) {
    if (!columnsMisfit(op, r).empty()) return false;
    if (!figuresMisfit(op, ranks, r.bytes, r.inPlace).empty()) return false;
    if (r.outOfPlace && !figuresMisfit(op, ranks, r.bytes, *r.outOfPlace).empty()) return false;
  }
  return true;
}

// Reads the text log. A test's rows are gathered, then turned into records once the test ends,
// when all it says (its name, its rank count) is known.
class TextReader {
 public:
  TextReader(const std::string& file, const std::string& op, int ranks, const std::string& library)
      : file_(file), flagOp_(op), flagRanks_(ranks) {
    if (!library.empty()) {
      facts_.library = library;
      facts_.libraryGiven = true;
      flagLibrary_ = true;
    }
  }

  NcclTestsImport read(const std::string& text) {
    std::size_t pos = 0;
    long long lineNo = 0;
    while (pos < text.size()) {
      const auto nl = text.find('\n', pos);
      const std::size_t end = nl == std::string::npos ? text.size() : nl;
      ++lineNo;
      where_ = file_ + ":" + std::to_string(lineNo);
      if (end - pos > kMaxNcclTestsLine)
        TPB_THROW(UsageError, where_ << ": a line of " << end - pos << " bytes, longer than nccl-tests writes (at most "
                                     << kMaxNcclTestsLine << ")");
      lastLine_ = nl == std::string::npos || nl + 1 == text.size();
      line(text.substr(pos, end - pos), nl == std::string::npos);
      pos = end + 1;
    }
    endTable();
    endTest();
    out_.library = facts_.library;
    if (!facts_.nccl.empty() && !out_.meta.nccl) out_.meta.nccl = facts_.nccl;
    if (facts_.library == "rccl") {
      // Known only once the whole log is read (its RCCL lines may follow the tables).
      for (auto& p : out_.points) setLibrary(p, "rccl");
      if (out_.meta.nccl) out_.meta.extra["rccl"] = *out_.meta.nccl;
      out_.meta.nccl.reset();
    }
    if (!command_.empty()) out_.meta.command = command_;
    finish(out_, left_, file_);
    for (auto& p : out_.points) {
      if (facts_.nicsPerNode > 0) p.extra["nics_per_node"] = facts_.nicsPerNode;
    }
    return std::move(out_);
  }

 private:
  void line(const std::string& raw, bool unterminated) {
    const std::string body = cleaned(raw);
    if (body.empty()) return;
    const bool hash = body[0] == '#';
    const auto text = hash ? body.find_first_not_of('#') : 0;
    if (text == std::string::npos) return;  // "#" alone
    const std::string content = body.substr(text);
    const auto t = tokens(content);
    if (t.empty()) {
      return;
    }
    if (t.size() >= 2 && t[0] == "nccl-tests" && t[1] == "version") return versionLine(t);
    if (!t[0].empty() && t[0].rfind("rccl-tests", 0) == 0) {  // "rccl-tests: Version ...", "# rccl-tests version ..."
      if (!flagLibrary_) facts_.library = "rccl";
      return;
    }
    if (t.size() >= 3 && t[0] == "Collective" && t[1] == "test" && t[2] == "starting:") return startingLine(t);
    if (t[0] == "nThread") return threadLine(t);
    if (t.size() >= 4 && t[0] == "Rank" && isInteger(t[1])) return rankLine(t);
    Columns c;
    if (columnsOf(t, c)) {
      endTable();
      if (!rows_.empty()) endTest();  // a second table: a new test
      columns_ = c;
      return;
    }
    if (!hash && unterminated && lastLine_ && columns_ && isInteger(t[0]) && (t.size() < 3 || elementTypeOf(t[2]).empty()))
      return cutRow();  // the log's last line, cut before its type
    if ((!hash || columns_) && t.size() >= 3 && isInteger(t[0]) && isInteger(t[1]) && !elementTypeOf(t[2]).empty())
      return rowLine(t, unterminated);
    if (t.size() >= 4 && t[0] == "Collective" && t[1] == "test" && t[2] == "concluded:") return concludedLine(t);
    endTable();
    if (t[0] == "Out" || t[0] == "Avg") return;  // the footer: "Out of bounds values", "Avg bus bandwidth"
    noteInfoLine(content, facts_);
    if (content.find("NCCL_ALGO=") != std::string::npos) {
      const auto at = content.find("NCCL_ALGO=");
      const auto v = tokens(content.substr(at + 10, 32));
      if (!v.empty()) pendingAlgo_ = printableLine(v[0].substr(0, v[0].find_first_of("\"'"))).substr(0, 32);
    }
    std::string program;
    if (!hash && programIn(t, program) && content.find(" INFO ") == std::string::npos) {
      pendingProgram_ = program;
      pendingRanks_ = ranksOfCommand(t);
      if (command_.empty()) command_ = printableLine(content).substr(0, 4096);
    }
  }

  void versionLine(const std::vector<std::string>& t) {
    for (const auto& tok : t)
      if (tok.rfind("nccl-library=", 0) == 0) {
        long long code = 0;
        if (integerToken(tok.substr(13), 0, 1000000, code)) facts_.nccl = ncclVersionText(code);
      }
  }

  // A new test, for "Collective test starting" or a second header.
  void beginTest() {
    endTable();
    endTest();
    test_ = Test{};
    inTest_ = true;
    if (!pendingProgram_.empty()) {
      testOf(pendingProgram_, test_);
      test_.opFrom = "the command line";
      test_.commandRanks = pendingRanks_;
    }
    test_.algorithm = pendingAlgo_;
  }

  void startingLine(const std::vector<std::string>& t) {
    pendingProgram_.clear();  // the line names the test: a command line before it does not
    beginTest();
    testOf(t.size() > 3 ? t[3] : "", test_);
    test_.opFrom = "the '# Collective test starting' line";
    startedByLine_ = true;
  }

  // "# Collective test concluded: all_reduce_perf" after the table: the test's name where
  // nothing before named it (a log that starts below its header).
  void concludedLine(const std::vector<std::string>& t) {
    endTable();
    if (!inTest_) return;
    Test named;
    testOf(t[3], named);
    if (test_.op.empty() && test_.unsupported.empty()) {
      test_.op = named.op;
      test_.unsupported = named.unsupported;
      test_.program = named.program;
      test_.opFrom = "the '# Collective test concluded' line";
    }
    endTest();
  }

  void threadLine(const std::vector<std::string>& t) {
    // A "# nThread" line opens a test, unless a "Collective test starting" line just did.
    if (!startedByLine_ || test_.haveIters || !rows_.empty()) beginTest();
    startedByLine_ = false;
    pendingProgram_.clear();
    test_.warmup = headerNumber(t, "warmup iters:", where_);
    test_.iters = headerNumber(t, "iters:", where_);
    const auto agg = headerNumber(t, "agg iters:", where_);
    if (agg > 1) test_.iters *= agg;  // each timed launch runs `agg iters` collectives
    if (test_.iters < 1) TPB_THROW(UsageError, where_ << ": no iteration count ('iters: N')");
    if (test_.iters > kMaxInt) TPB_THROW(UsageError, where_ << ": iters x agg iters over " << kMaxInt);
    if (test_.warmup < 0) test_.warmup = 0;
    test_.haveIters = true;
    test_.validation = headerNumber(t, "validation:", where_) != 0;
  }

  void rankLine(const std::vector<std::string>& t) {
    // "Rank  0 Group  0 Pid  123 on host device  0 [0000:04:00] NVIDIA H100 80GB HBM3", the
    // Group column absent before 2.13 or so.
    if (!rows_.empty()) beginTest();
    if (!inTest_) beginTest();
    const auto on = std::find(t.begin(), t.end(), "on");
    if (on == t.end() || on + 1 == t.end()) TPB_THROW(UsageError, where_ << ": a Rank line without its host ('on HOST')");
    const auto bracket = std::find_if(on, t.end(), [](const std::string& s) { return !s.empty() && s[0] == '['; });
    std::string gpu;
    for (auto k = bracket == t.end() ? t.end() : bracket + 1; k != t.end(); ++k) gpu += (gpu.empty() ? "" : " ") + *k;
    if (gpu.size() > kMaxNcclTestsName || (on + 1)->size() > kMaxNcclTestsName)
      TPB_THROW(UsageError, where_ << ": a host or GPU name longer than " << kMaxNcclTestsName << " characters");
    if (static_cast<long long>(test_.devices.size()) >= kMaxRanks)
      TPB_THROW(UsageError, where_ << ": more than " << kMaxRanks << " ranks");
    if (!flagLibrary_ && (gpu.find("AMD") != std::string::npos || gpu.find("Instinct") != std::string::npos))
      facts_.library = "rccl";
    test_.devices.emplace_back(printableLine(*(on + 1)), printableLine(gpu));
    test_.ranks = static_cast<int>(test_.devices.size());
    test_.ranksFrom = "the Rank lines";
  }

  void rowLine(const std::vector<std::string>& t, bool unterminated) {
    if (!columns_) {
      columns_ = columnsFromRow(t);
      if (!columns_) {
        // A row of a known shape with too few columns may be the cut end of a pasted table.
        return cutRow();
      }
    }
    if (!inTest_) beginTest();
    if (!test_.unsupported.empty()) {
      left_.add(test_.unsupported);
      return;
    }
    if (pendingCut_) TPB_THROW(UsageError, pendingCutWhere_ << " (a row cut short inside the table)");
    if (!rows_.empty() && t.size() > 0) {
      long long bytes = 0;
      if (integerToken(t[0], 0, kMaxCount, bytes) && bytes < rows_.back().bytes) nextSweep();
    }
    std::optional<Row> r;
    try {
      r = rowOf(t, *columns_, where_);
    } catch (const UsageError&) {
      if (!(unterminated && lastLine_)) throw;
      return cutRow();  // the log's last line, cut inside a figure
    }
    if (!r) {
      pendingCut_ = true;  // cut if the table ends here, damaged if another row follows
      pendingCutWhere_ = where_ + ": " + std::to_string(t.size()) + " columns, fewer than the table's " +
                         std::to_string(columns_->preamble.size() + columns_->perPlacement * columns_->placements);
      return;
    }
    if (unterminated && lastLine_) lastRowUnterminated_ = true;
    rows_.push_back(std::move(*r));
    if (rows_.size() + out_.points.size() > kMaxCollectiveRecords / 2)
      TPB_THROW(UsageError, where_ << ": more than " << kMaxCollectiveRecords << " points (what a results file holds)");
  }

  // The rows after a size that went down: another sweep of the same header (runs pasted one after
  // another, or -o all's reductions in one table), read as a test of its own.
  void nextSweep() {
    const Test header = test_;
    const auto columns = columns_;
    endTest();
    test_ = header;
    inTest_ = true;
    columns_ = columns;
  }

  void cutRow() {
    if (!inTest_) beginTest();
    pendingCut_ = true;
    pendingCutWhere_ = where_;
  }

  void endTable() {
    if (pendingCut_) {
      ++cut_;
      pendingCut_ = false;
    }
    // A table's columns stay until a new header: nccl-tests prints one per test.
  }

  void endTest() {
    if (!inTest_) return;
    inTest_ = false;
    Test t = test_;
    std::vector<Row> rows = std::move(rows_);
    rows_.clear();
    columns_.reset();
    const long long cut = cut_;
    cut_ = 0;
    if (cut > 0) left_.add("cut short (the log ends inside the row)", cut);
    if (rows.empty()) return;
    // A log's last row with no newline after it may have been cut inside its last figure.
    const bool lastMayBeCut = lastRowUnterminated_;
    lastRowUnterminated_ = false;
    const std::string where = rows.front().where;
    // The op: the test's own line, the command line, --op, then the figures.
    if (!flagOp_.empty()) {
      const std::string flag = opOfNcclTestsProgram(flagOp_);
      if (!t.op.empty() && t.op != flag)
        TPB_THROW(UsageError, where << ": the log is " << t.op << "'s output (by " << t.opFrom << "), not --op " << flagOp_);
      if (t.op.empty()) {
        t.op = flag;
        t.opFrom = "--op";
      }
    }
    if (flagRanks_ > 0) {
      t.ranks = flagRanks_;
      t.ranksFrom = "--ranks";
    }
    if (t.ranks < 1 && t.commandRanks > 0) {
      t.ranks = t.commandRanks;
      t.ranksFrom = "the command line";
    }
    // Logs that print only some of their Rank lines ("..." for the rest): where the figures do not
    // fit the count printed, the count they do fit.
    const auto byFigures = [&](const std::string& op) {
      bool ambiguous = false;
      const int n = ranksByFigures(op, rows, ambiguous);
      if (n < 1 && t.ranks < 1)
        TPB_THROW(UsageError, where << ": no Rank lines before the table, and " << op << "'s busbw / algbw "
                                    << (ambiguous ? "fits several rank counts" : "cannot tell the rank count")
                                    << ": give --ranks");
      if (n > t.ranks) {
        t.ranksFrom = t.ranks < 1 ? "busbw / algbw"
                                  : "busbw / algbw (the log prints " + std::to_string(t.ranks) + " Rank lines)";
        t.ranks = n;
      }
    };
    if (!t.op.empty() && t.ranksFrom != "--ranks" && (t.ranks < 1 || !everyRowFits(t.op, t.ranks, rows)))
      byFigures(t.op);
    if (t.op.empty()) {
      // The one op (and, without Rank lines, the one rank count) that every row fits.
      std::vector<std::pair<std::string, int>> fit;
      for (const auto& op : candidateOps()) {
        int n = t.ranks;
        if (t.ranksFrom != "--ranks" && (n < 1 || !everyRowFits(op, n, rows))) {
          bool ambiguous = false;
          const int m = ranksByFigures(op, rows, ambiguous);
          if (m > n) n = m;
        }
        if (n >= 1 && everyRowFits(op, n, rows)) fit.emplace_back(op, n);
      }
      std::string names;
      for (const auto& [op, n] : fit) names += (names.empty() ? "" : ", ") + op + " at " + std::to_string(n) + " ranks";
      if (fit.size() != 1)
        TPB_THROW(UsageError, where << ": the log does not say which test it is (no 'Collective test starting' or command "
                                       "line), and its figures fit "
                                    << (fit.empty() ? (t.ranks > 0 ? "no op at its " + std::to_string(t.ranks) + " Rank lines' count"
                                                                   : std::string("no op at a rank count they tell"))
                                                    : names + " alike")
                                    << ": give --op" << (fit.empty() ? " and --ranks" : ""));
      t.op = fit.front().first;
      t.opFrom = "busbw / algbw";
      if (fit.front().second != t.ranks) {
        t.ranksFrom = t.ranks < 1 ? "busbw / algbw"
                                  : "busbw / algbw (the log prints " + std::to_string(t.ranks) + " Rank lines)";
        t.ranks = fit.front().second;
      }
    }
    if (!t.haveIters) t.iters = 0;
    NcclTestsTest summary{t.op, t.opFrom, t.ranksFrom, t.ranks, 0};
    // Where the test ran, on each of its points: a file merging several imports keeps it.
    const std::string gpu = t.devices.empty() ? "" : t.devices.front().second;
    const std::size_t nodes = distinctHosts(t).size();
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      if (const std::string why = columnsMisfit(t.op, r); !why.empty())
        TPB_THROW(UsageError, r.where << ": " << why << ": is this " << t.op << "'s output? (--op names the test)");
      if (r.bytes == 0) {
        left_.add("of size 0");
        continue;
      }
      if (rootedOp(t.op) && r.root && *r.root >= t.ranks)
        TPB_THROW(UsageError, r.where << ": root " << *r.root << " is not one of the " << t.ranks << " ranks");
      std::string misfit = figuresMisfit(t.op, t.ranks, r.bytes, r.inPlace);
      if (misfit.empty() && r.outOfPlace) misfit = figuresMisfit(t.op, t.ranks, r.bytes, *r.outOfPlace);
      if (!misfit.empty()) {
        if (lastMayBeCut && i + 1 == rows.size()) {
          left_.add("cut short (the log ends inside the row)");
          continue;
        }
        TPB_THROW(UsageError, r.where << ": " << misfit << ": is this " << t.op << "'s output? (--op names the test"
                                      << (t.ranksFrom == "the Rank lines" ? "; --ranks the rank count, where the log leaves out Rank lines" : "")
                                      << ")");
      }
      noteDevices(out_.meta, t);
      if (r.outOfPlace) out_.points.push_back(record(t, facts_.library, r, false, *r.outOfPlace, r.where));
      out_.points.push_back(record(t, facts_.library, r, true, r.inPlace, r.where));
      summary.points += r.outOfPlace ? 2 : 1;
      auto& added = out_.points;
      for (std::size_t k = added.size() - (r.outOfPlace ? 2 : 1); k < added.size(); ++k) {
        if (!gpu.empty()) added[k].extra["gpu"] = gpu;
        if (nodes > 0) added[k].extra["nodes"] = nodes;
        if (t.ranksFrom != "the Rank lines") added[k].extra["ranks_from"] = t.ranksFrom;
      }
    }
    if (summary.points > 0) out_.tests.push_back(summary);
  }

  std::string file_, flagOp_, where_;
  int flagRanks_ = 0;
  bool flagLibrary_ = false;
  NcclTestsImport out_;
  LeftOut left_;
  LogFacts facts_;
  Test test_;
  bool inTest_ = false, startedByLine_ = false;
  std::optional<Columns> columns_;
  std::vector<Row> rows_;
  std::string pendingProgram_, pendingAlgo_, command_;
  int pendingRanks_ = 0;
  bool pendingCut_ = false, lastLine_ = false, lastRowUnterminated_ = false;
  std::string pendingCutWhere_;
  long long cut_ = 0;
};

}  // namespace

std::string opOfNcclTestsProgram(const std::string& program) {
  std::string name = baseName(program);
  if (name.size() > 4 && name.compare(name.size() - 4, 4, "_mpi") == 0) name.resize(name.size() - 4);  // *_perf_mpi
  if (name.size() > 5 && name.compare(name.size() - 5, 5, "_perf") == 0) name.resize(name.size() - 5);
  // nccl-tests' names with an underscore; the others are the op's own name.
  if (name == "all_reduce") name = "allreduce";
  if (name == "all_gather") name = "allgather";
  if (name == "sendrecv" || name == kShiftOp) return kShiftOp;
  const auto& ops = ncclTestsOps();
  return std::find(ops.begin(), ops.end(), name) == ops.end() ? "" : name;
}

const std::vector<std::string>& ncclTestsOps() {
  static const std::vector<std::string> ops = {"allreduce", "allgather", "reduce_scatter", "broadcast",
                                               "reduce",    "alltoall",  "sendrecv"};
  return ops;
}

NcclTestsImport parseNcclTestsText(const std::string& text, const std::string& file, const std::string& op, int ranks,
                                   const std::string& library) {
  return TextReader(file, op, ranks, library).read(text);
}

NcclTestsImport parseNcclTestsJson(const json& doc, const std::string& file, const std::string& op) {
  NcclTestsImport out;
  LeftOut left;
  const JsonIn top(doc, file);
  top.object();
  Test test;
  const JsonIn args = top.at("args");
  if (args.size() == 0) args.fail("the command line, program first");
  testOf(args[0].str(), test);
  if (!op.empty() && !test.op.empty() && opOfNcclTestsProgram(op) != test.op)
    TPB_THROW(UsageError, file << ": the file is " << test.op << "'s output, not --op " << op);
  test.opFrom = "the command line";
  std::string command = "nccl-tests";
  for (std::size_t i = 0; i < args.size() && i < 256; ++i) command += " " + printableLine(args[i].str()).substr(0, 4096);
  out.meta.command = command;
  if (const auto v = optInteger(top, "nccl_version", 0, 1000000)) out.meta.nccl = ncclVersionText(*v);
  if (const auto s = optStr(top, "start_time")) out.meta.timestampUtc = printableLine(*s).substr(0, 64);
  const JsonIn config = top.at("config");
  test.iters = config.at("iterations").integer(1, 1LL << 31);
  test.warmup = config.at("warmup_iters").integer(0, 1LL << 31);
  if (const auto agg = optInteger(config, "aggregated_iterations", 1, 1LL << 20); agg && *agg > 1) test.iters *= *agg;
  if (const auto v = optInteger(config, "validation", 0, 1LL << 31)) test.validation = *v != 0;
  // The writer puts `devices` in `config`, once the device report is printed (a run that failed
  // before it has none, and no results either). A build without MPI lists only rank 0's device
  // however many GPUs it drove (-g, -t): the rank count is then the config's GPUs x threads.
  const auto devices = config.find("devices");
  if (devices) {
    if (devices->size() > static_cast<std::size_t>(kMaxRanks)) devices->fail("at most 65536 ranks");
    for (std::size_t i = 0; i < devices->size(); ++i) {
      const JsonIn d = (*devices)[i];
      d.object();
      const std::string host = d.at("hostname").str(), gpu = optStr(d, "device_info").value_or("");
      if (host.size() > kMaxNcclTestsName || gpu.size() > kMaxNcclTestsName)
        d.fail("a host and GPU name of at most " + std::to_string(kMaxNcclTestsName) + " characters");
      test.devices.emplace_back(printableLine(host), printableLine(gpu));
    }
  }
  const long long perProcess = optInteger(config, "ngpus", 1, kMaxRanks).value_or(1) *
                               optInteger(config, "nthreads", 1, kMaxRanks).value_or(1);
  if (test.devices.size() >= static_cast<std::size_t>(perProcess)) {
    test.ranks = static_cast<int>(test.devices.size());
    test.ranksFrom = "the devices";
  } else if (perProcess <= kMaxRanks) {
    test.ranks = static_cast<int>(perProcess);
    test.ranksFrom = "the config's ngpus x nthreads (one process)";
  } else {
    config.fail("at most 65536 ranks (ngpus x nthreads)");
  }
  if (!test.devices.empty()) noteDevices(out.meta, test);
  // A run that stopped before its first size leaves a file without results (its log says why).
  if (!top.find("results"))
    TPB_THROW(UsageError, file << ": no results: nccl-tests stopped before its first size (its log says why)");
  const JsonIn results = top.at("results");
  if (results.size() > kMaxCollectiveRecords / 2) results.fail("at most " + std::to_string(kMaxCollectiveRecords / 2) + " rows");
  const auto placement = [&](const JsonIn& row, const char* key, Measured& m) {
    const auto p = row.find(key);
    if (!p) return false;
    p->object();
    const char* timeKey = p->find("time") ? "time" : "cpu_time";
    const auto num = [&](const char* k) {
      const JsonIn v = p->at(k);
      return v.value().is_string() && v.str() == "nan" ? NAN : v.number(0, kLargestFinite);
    };
    m.timeUs = num(timeKey);
    m.algbw = num("alg_bw");
    m.busbw = num("bus_bw");
    if (const auto w = p->find("nwrong")) m.wrong = w->integer(0, kMaxCount);  // 2.5 refused, as the text reader does
    const std::string iterKey = std::string(key) + "_per_iter";
    if (const auto it = row.find(iterKey.c_str())) {
      const JsonIn times = it->at("times_us");
      if (times.size() > (1u << 20)) times.fail("at most 2^20 times");
      for (std::size_t i = 0; i < times.size(); ++i) m.timesUs.push_back(times[i].number(0, kLargestFinite));
      if (m.timesUs.empty()) times.fail("per-iteration times");
      if (const auto s = optInteger(*it, "skipped_iterations", 0, 1LL << 31)) m.skipped = *s;
    }
    return true;
  };
  NcclTestsTest summary{test.op, test.opFrom, test.ranksFrom, test.ranks, 0};
  for (std::size_t i = 0; i < results.size(); ++i) {
    const JsonIn row = results[i];
    row.object();
    const std::string where = file + ": " + row.path();
    if (!test.unsupported.empty()) {
      left.add(test.unsupported);
      continue;
    }
    Row r;
    r.where = where;
    r.bytes = static_cast<long long>(row.at("size").unsignedInteger(kMaxCount));
    r.count = row.find("count") ? static_cast<long long>(row.at("count").unsignedInteger(kMaxCount))
                                : r.bytes / 4;
    if (const auto ty = row.find("type")) {
      r.dtype = elementTypeOf(ty->str());
      if (r.dtype.empty()) ty->fail("an NCCL element type");
    }
    if (const auto ro = row.find("redop")) {
      r.redop = reductionOf(ro->str());
      if (r.redop.empty()) ro->fail("an NCCL reduction");
    }
    if (const auto rt = row.find("root")) {
      const auto t = tokens(rt->value().is_string() ? rt->str() : rt->value().dump());
      long long root = -1;
      if (t.size() != 1 || !integerToken(t[0], -1, kMaxRanks - 1, root)) rt->fail("a rank or -1");
      r.root = root;
    }
    if (const std::string why = columnsMisfit(test.op, r); !why.empty()) row.fail("a row of " + test.op + " (" + why + ")");
    if (r.root && rootedOp(test.op) && *r.root >= test.ranks) row.at("root").fail("one of the " + std::to_string(test.ranks) + " ranks");
    if (r.bytes == 0) {
      left.add("of size 0");
      continue;
    }
    Measured m;
    const bool oop = placement(row, "out_of_place", m);
    Measured inPlace;
    const bool ip = placement(row, "in_place", inPlace);
    for (const auto& [has, pm, inP, key] : {std::tuple{oop, &m, false, ".out_of_place"}, std::tuple{ip, &inPlace, true, ".in_place"}}) {
      if (!has) continue;
      // The file's own time, algbw and busbw agree with each other and with the rank count
      // (with -I too: `time` is then the mean the per-iteration times average to).
      if (const std::string why = figuresMisfit(test.op, test.ranks, r.bytes, *pm); !why.empty())
        TPB_THROW(UsageError, where << key << ": " << why);
      out.points.push_back(record(test, "nccl", r, inP, *pm, where + key));
      if (!test.devices.empty() && !test.devices.front().second.empty())
        out.points.back().extra["gpu"] = test.devices.front().second;
      ++summary.points;
    }
  }
  if (summary.points > 0) out.tests.push_back(summary);
  finish(out, left, file);
  for (auto& p : out.points)
    if (out.meta.nodes) p.extra["nodes"] = *out.meta.nodes;
  return out;
}

namespace {

// rccl-tests' names of its tests ("AllReduce", "ReduceScatter", "SendRecv") in tpbench's; "" for
// another (Gather, Scatter, AllToAllv: no op here).
std::string opOfRcclName(const std::string& name) {
  std::string k;
  for (char c : name)
    if (std::isalnum(static_cast<unsigned char>(c))) k += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::map<std::string, std::string> ops = {{"allreduce", "allreduce"},   {"allgather", "allgather"},
                                                         {"reducescatter", "reduce_scatter"}, {"broadcast", "broadcast"},
                                                         {"reduce", "reduce"},         {"alltoall", "alltoall"},
                                                         {"sendrecv", kShiftOp}};
  const auto it = ops.find(k);
  return it == ops.end() ? "" : it->second;
}

}  // namespace

bool looksLikeRcclTestsJsonLines(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || text[first] != '{') return false;
  const auto eol = text.find('\n', first);
  const std::string line = text.substr(first, eol == std::string::npos ? std::string::npos : eol - first);
  // One object per line, with rccl-tests' camel-case figures: not nccl-tests' -J document.
  return line.find("\"busBw\"") != std::string::npos && line.find("\"algBw\"") != std::string::npos;
}

NcclTestsImport parseRcclTestsJsonLines(const std::string& text, const std::string& file, const std::string& op) {
  NcclTestsImport out;
  LeftOut left;
  std::vector<NcclTestsTest> tests;
  std::size_t pos = 0, lineNo = 0;
  long long nodes = 0;
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    const std::size_t end = nl == std::string::npos ? text.size() : nl;
    ++lineNo;
    if (end - pos > kMaxNcclTestsLine)
      TPB_THROW(UsageError, file << ":" << lineNo << ": a line of " << end - pos << " bytes, longer than rccl-tests writes");
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = file + ":" + std::to_string(lineNo);
    nlohmann::json doc;
    try {
      doc = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      // A last line cut short (a job killed while writing) is counted, as a cut text row is.
      if (nl == std::string::npos || pos >= text.size()) {
        left.add("cut short");
        continue;
      }
      TPB_THROW(UsageError, where << ": not a JSON object (rccl-tests' JSON lines hold one per line)");
    }
    const JsonIn rec(doc, where);
    rec.object();
    const std::string name = rec.at("name").str();
    const std::string recOp = opOfRcclName(name);
    if (recOp.empty()) {
      left.add("of rccl-tests' " + printableLine(name).substr(0, 32) + " (no op here)");
      continue;
    }
    if (!op.empty() && opOfNcclTestsProgram(op) != recOp)
      TPB_THROW(UsageError, where << ": the record is " << recOp << "'s, not --op " << op);
    Test t;
    t.op = recOp;
    t.opFrom = "the records' \"name\"";
    // The MPI build writes ranks and nodes; the single-process build the GPUs it drove.
    const auto ranks = rec.find("ranks") ? rec.find("ranks") : rec.find("gpus");
    if (!ranks) rec.fail("\"ranks\" or \"gpus\" (the rank count)");
    t.ranks = static_cast<int>(ranks->integer(1, kMaxRanks));
    t.ranksFrom = "the records";
    if (const auto n = optInteger(rec, "nodes", 1, kMaxRanks)) nodes = std::max(nodes, *n);
    Row r;
    r.where = where;
    r.bytes = static_cast<long long>(rec.at("size").unsignedInteger(kMaxCount));
    r.dtype = elementTypeOf(rec.at("type").str());
    if (r.dtype.empty()) rec.at("type").fail("an element type");
    r.count = r.bytes / static_cast<long long>(elementBytes(r.dtype));
    if (const auto ro = rec.find("redop")) {
      r.redop = reductionOf(ro->str());
      if (r.redop.empty()) ro->fail("a reduction");
    }
    if (rootedOp(recOp)) r.root = optInteger(rec, "root", 0, kMaxRanks - 1).value_or(0);
    if (r.bytes == 0) {
      left.add("of size 0");
      continue;
    }
    Measured m;
    m.timeUs = rec.at("time").number(0, kLargestFinite);
    m.algbw = rec.at("algBw").number(0, kLargestFinite);
    m.busbw = rec.at("busBw").number(0, kLargestFinite);
    if (const auto w = rec.find("#wrong") ? rec.find("#wrong") : rec.find("wrong")) {
      long long wrong = 0;
      const std::string count = w->value().is_string() ? w->str() : w->value().dump();
      if (count != "N/A") {
        if (!integerToken(count, 0, kMaxCount, wrong)) w->fail("a count of wrong elements");
        m.wrong = wrong;
      }
    }
    if (const std::string why = figuresMisfit(recOp, t.ranks, r.bytes, m); !why.empty())
      TPB_THROW(UsageError, where << ": " << why);
    const bool inPlace = rec.at("inPlace").integer(0, 1) == 1;
    out.points.push_back(record(t, "rccl", r, inPlace, m, where));
    if (tests.empty() || tests.back().op != recOp || tests.back().ranks != t.ranks)
      tests.push_back({recOp, t.opFrom, t.ranksFrom, t.ranks, 0});
    ++tests.back().points;
  }
  out.tests = tests;
  out.library = "rccl";
  if (nodes > 0) out.meta.nodes = nodes;
  finish(out, left, file);
  for (auto& p : out.points)
    if (nodes > 0) p.extra["nodes"] = nodes;
  return out;
}

NcclTestsImport importNcclTests(const std::string& path, const std::string& op, int ranks, const std::string& library) {
  const RegularFile f("nccl-tests file", path);
  const auto bytes = f.readAll(kMaxNcclTestsBytes, "an nccl-tests log is a few MB at most");
  std::string text(bytes.begin(), bytes.end());
  if (looksLikeRcclTestsJsonLines(text)) return parseRcclTestsJsonLines(text, path, op);
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    return parseNcclTestsJson(readJsonBounded(path, "nccl-tests file", kMaxNcclTestsBytes), path, op);
  }
  if (text.find('\0') != std::string::npos) TPB_THROW(UsageError, "nccl-tests file " << path << ": binary data, not nccl-tests' text output");
  return parseNcclTestsText(text, path, op, ranks, library);
}

}  // namespace tpb
