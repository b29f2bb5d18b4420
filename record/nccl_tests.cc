// record/nccl_tests.cc — see nccl_tests.h.
#include "record/nccl_tests.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>

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
constexpr std::size_t kMaxPoints = 1u << 20;

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
  if (t.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || errno == ERANGE || !std::isfinite(v) || v < 0) return false;
  out = v;
  return true;
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

std::vector<std::string> tokens(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

// One test of a file as it is read: what its header said, and the rows counted out.
struct Test {
  std::string op;
  std::string unsupported;  // why its rows are left out ("" : they are read)
  long long iters = 0, warmup = 0;
  int ranks = 0;
  bool validation = true;
  std::vector<std::pair<std::string, std::string>> devices;  // host, GPU of each rank
};

// One placement's figures as the file gives them.
struct Measured {
  double timeUs = NAN, algbw = NAN, busbw = NAN;
  std::optional<long long> wrong;  // nullopt: validation off ("N/A" / null)
  // Per-iteration figures where the file has them (-I): text gives min, max, p99 and cv; JSON
  // the times themselves.
  double minUs = NAN, maxUs = NAN, p99Us = NAN, cvPct = NAN;
  std::vector<double> timesUs;
  long long skipped = 0;
};

// Rows left out, by reason, counted for the one line each the command prints.
class LeftOut {
 public:
  void add(const std::string& why) { ++counts_[why]; }
  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    for (const auto& [why, n] : counts_) out.push_back(std::to_string(n) + (n == 1 ? " row " : " rows ") + why);
    return out;
  }

 private:
  std::map<std::string, long long> counts_;
};

// Why a row is not imported ("" to import it): the checks that do not depend on its figures.
std::string leftOutWhy(const Test& t, const std::string& type, const std::string& redop, long long bytes) {
  if (type != "float") return "of type " + printableLine(type) + " (records hold float32 elements; run with -d float)";
  const bool sums = t.op == "allreduce" || t.op == "reduce" || t.op == "reduce_scatter";
  if (sums && redop != "sum") return "reducing with " + printableLine(redop) + " (tpbench's ops sum; run with -o sum)";
  if (bytes == 0) return "of size 0";
  return "";
}

// The record of one placement of one row, checked: the figures must agree with one another as
// nccl-tests computes them, else the row is not what it claims (another test, a damaged line).
CollectiveRecord record(const Test& t, long long bytes, std::optional<int> root, bool inPlace, const Measured& m,
                        const std::string& where) {
  const auto refuse = [&](const std::string& why) { TPB_THROW(UsageError, where << ": " << why); };
  if (!(m.timeUs > 0)) refuse("time must be a number > 0");
  // nccl-tests prints 2 decimals (1 or none for wide values): allow that rounding and 1 %.
  const double algbw = static_cast<double>(bytes) / (m.timeUs * 1e3);
  const auto near = [](double a, double b) { return std::fabs(a - b) <= 0.01 * std::max(a, b) + 0.02; };
  if (!near(m.algbw, algbw)) {
    std::ostringstream why;
    why << "algbw " << m.algbw << " GB/s is not size / time (" << algbw << " GB/s)";
    refuse(why.str());
  }
  const double factor = busFactorOf(t.op)(t.ranks);
  if (!near(m.busbw, m.algbw * factor)) {
    std::ostringstream why;
    why << "busbw " << m.busbw << " GB/s is not algbw x " << factor << " (" << t.op << " at " << t.ranks
        << " ranks): is this " << t.op << "'s output? (--op names the test)";
    refuse(why.str());
  }
  CollectiveRecord r;
  r.op = t.op;
  r.algo = kNcclTestsOrigin;
  r.transport = "nccl";
  r.device = "cuda";
  r.root = root;
  r.inPlace = inPlace;
  r.nGpus = t.ranks;
  r.bytes = static_cast<std::uint64_t>(bytes);
  r.count = r.bytes / 4;
  r.measured = true;
  r.timing = kBackToBackTiming;
  r.iters = static_cast<int>(t.iters);
  r.warmup = static_cast<int>(t.warmup);
  r.wrong = t.validation ? m.wrong : std::nullopt;
  r.entry.origin = kNcclTestsOrigin;
  r.entry.carrier = "nccl";
  r.entry.order = kOrder;
  r.entry.color = kColor;
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
    r.algbwGbps = static_cast<double>(bytes) / (s.median * 1e3);
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
    if (!(m.minUs <= m.timeUs && m.timeUs <= m.maxUs)) refuse("the mean time lies outside i_min .. i_max");
    r.timer = kPerIterTimer;
    r.timeMinUs = m.minUs;
    r.timeMaxUs = m.maxUs;
    r.timeExtra["mean_launch"] = m.timeUs;
    if (std::isfinite(m.p99Us)) r.timeExtra["nccl_tests_p99"] = m.p99Us;
    if (std::isfinite(m.cvPct)) r.timeExtra["nccl_tests_cv"] = m.cvPct / 100;
  }
  r.algbwGbps = m.algbw;
  r.busbwGbps = m.busbw;
  return r;
}

// A row's root as a record holds it: a rank of the test for a rooted op (else `fail` says why),
// none for the others.
template <typename Fail>
std::optional<int> rootOfRow(const Test& t, long long root, Fail fail) {
  if (t.op != "broadcast" && t.op != "reduce") return std::nullopt;
  if (root < 0 || root >= t.ranks) fail("one of the " + std::to_string(t.ranks) + " ranks");
  return static_cast<int>(root);
}

void checkOp(const std::string& given, const std::string& found, const std::string& where) {
  if (!given.empty() && !found.empty() && given != found)
    TPB_THROW(UsageError, where << ": the file is " << found << "'s output, not --op " << given);
}

// The test a program runs, or why tpbench cannot hold its rows.
void testOf(const std::string& program, Test& t) {
  t.op = opOfNcclTestsProgram(program);
  if (t.op.empty())
    t.unsupported = "of " + printableLine(baseName(program)) +
                    " (tpbench holds all_reduce, all_gather, reduce_scatter, broadcast, reduce and alltoall; "
                    "sendrecv_perf times one shift, tpbench's sendrecv a round trip)";
}

// Where the file's ranks ran: the first test that has rows names them.
void noteDevices(Meta& meta, const Test& t) {
  if (meta.worldSize) return;
  meta.worldSize = t.ranks;
  meta.hosts.emplace();
  meta.gpus.emplace();
  for (const auto& [host, gpu] : t.devices) {
    if (std::find(meta.hosts->begin(), meta.hosts->end(), host) == meta.hosts->end()) meta.hosts->push_back(host);
    meta.gpus->push_back(gpu);
  }
  if (!meta.hosts->empty()) meta.host = meta.hosts->front();
}

void finish(NcclTestsImport& out, const LeftOut& left, const std::string& file) {
  out.leftOut = left.lines();
  if (out.meta.hosts) out.meta.nodes = static_cast<long long>(out.meta.hosts->size());
  // Where each point ran, on the point itself: a file merging several imports keeps it.
  for (auto& p : out.points) {
    if (out.meta.gpus && !out.meta.gpus->empty() && !out.meta.gpus->front().empty()) p.extra["gpu"] = out.meta.gpus->front();
    if (out.meta.nodes) p.extra["nodes"] = *out.meta.nodes;
  }
  if (out.points.empty())
    TPB_THROW(UsageError, file << ": no nccl-tests result row tpbench can hold"
                               << (out.leftOut.empty() ? "" : " (" + out.leftOut.front() + ")"));
}

// ---- text ----------------------------------------------------------------------------------

// The table's columns, from its header line "#  size  count  type  redop  root  time  algbw ...".
struct Columns {
  std::vector<std::string> preamble;  // size, count, type, redop, root (older tables: fewer)
  std::size_t perPlacement = 0;       // time algbw busbw #wrong, + i_min i_max i_p99 i_cv% with -I
  bool perIter = false, timestamp = false;
};

bool columnsOf(const std::vector<std::string>& t, Columns& c) {
  if (t.size() < 2 || t[0] != "#" || t[1] != "size") return false;
  std::size_t i = 1;
  while (i < t.size() && t[i] != "time" && t[i] != "cputime") c.preamble.push_back(t[i++]);
  std::size_t groups = 0;
  for (; i < t.size(); ++i) {
    if (t[i] == "time" || t[i] == "cputime") ++groups;
    else if (t[i] == "i_min") c.perIter = true;
    else if (t[i] == "timestamp") c.timestamp = true;
  }
  c.perPlacement = c.perIter ? 8 : 4;
  return groups >= 1;
}

long long headerNumber(const std::string& line, const std::string& key, const std::string& where) {
  const auto at = line.find(key);
  if (at == std::string::npos) return -1;
  long long v = 0;
  const auto t = tokens(line.substr(at + key.size(), 24));
  if (t.empty() || !integerToken(t[0], 0, 1LL << 31, v)) TPB_THROW(UsageError, where << ": '" << key << "' is not followed by a count");
  return v;
}

Measured placementOf(const std::vector<std::string>& t, std::size_t at, const Columns& c, const std::string& where) {
  Measured m;
  const auto num = [&](std::size_t k, const char* name) {
    double v = 0;
    if (!numberToken(t[at + k], v))
      TPB_THROW(UsageError, where << ": " << name << " '" << printableLine(t[at + k]) << "' is not a number >= 0");
    return v;
  };
  m.timeUs = num(0, "time");
  m.algbw = num(1, "algbw");
  m.busbw = num(2, "busbw");
  if (t[at + 3] != "N/A") {  // printed with %g: "1.2e+07" for a large count
    const double wrong = num(3, "#wrong");
    if (wrong > static_cast<double>(kMaxCount) || wrong != std::floor(wrong))
      TPB_THROW(UsageError, where << ": #wrong '" << printableLine(t[at + 3]) << "' is not a count of elements");
    m.wrong = static_cast<long long>(wrong);
  }
  if (c.perIter) {
    m.minUs = num(4, "i_min");
    m.maxUs = num(5, "i_max");
    m.p99Us = num(6, "i_p99");
    m.cvPct = num(7, "i_cv%");
  }
  return m;
}

}  // namespace

std::string opOfNcclTestsProgram(const std::string& program) {
  std::string name = baseName(program);
  if (name.size() > 5 && name.compare(name.size() - 5, 5, "_perf") == 0) name.resize(name.size() - 5);
  if (name.size() > 4 && name.compare(name.size() - 4, 4, "_mpi") == 0) name.resize(name.size() - 4);  // *_perf_mpi
  if (name.size() > 5 && name.compare(name.size() - 5, 5, "_perf") == 0) name.resize(name.size() - 5);
  // nccl-tests' names with an underscore; the others are the op's own name.
  if (name == "all_reduce") name = "allreduce";
  if (name == "all_gather") name = "allgather";
  const auto& ops = ncclTestsOps();
  return std::find(ops.begin(), ops.end(), name) == ops.end() ? "" : name;
}

const std::vector<std::string>& ncclTestsOps() {
  static const std::vector<std::string> ops = {"allreduce", "allgather", "reduce_scatter", "broadcast", "reduce", "alltoall"};
  return ops;
}

NcclTestsImport parseNcclTestsText(const std::string& text, const std::string& file, const std::string& op) {
  NcclTestsImport out;
  LeftOut left;
  Test test;
  Columns columns;
  bool haveColumns = false, inTest = false;
  std::istringstream in(text);
  std::string line;
  for (long long lineNo = 1; std::getline(in, line); ++lineNo) {
    const std::string where = file + ":" + std::to_string(lineNo);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto t = tokens(line);
    if (t.empty()) continue;
    if (line[0] == '#') {
      if (line.rfind("# nccl-tests version", 0) == 0) {
        for (const auto& tok : t)
          if (tok.rfind("nccl-library=", 0) == 0) {
            long long code = 0;
            if (integerToken(tok.substr(13), 0, 1000000, code)) out.meta.nccl = ncclVersionText(code);
          }
      } else if (line.rfind("# Collective test starting:", 0) == 0) {
        test = Test{};
        testOf(t.size() > 4 ? t[4] : "", test);
        checkOp(op, test.op, where);
        haveColumns = false;
        inTest = true;
      } else if (line.rfind("# nThread", 0) == 0) {
        if (!inTest) {  // an older log: no "Collective test starting" line before
          test = Test{};
          test.op = op;
          haveColumns = false;
        }
        inTest = false;  // the next "Collective test starting" begins a new test
        // "warmup iters: 5 iters: 20 agg iters: 1": the iters after warm-up's.
        const auto warm = line.find("warmup iters:");
        test.warmup = headerNumber(line, "warmup iters:", where);
        test.iters = headerNumber(line.substr(warm == std::string::npos ? 0 : warm + 13), " iters:", where);
        const auto agg = headerNumber(line, "agg iters:", where);
        if (agg > 1) test.iters *= agg;  // each timed launch runs `agg iters` collectives
        if (test.iters < 1 || test.warmup < 0) TPB_THROW(UsageError, where << ": no iteration count ('iters: N')");
        test.validation = headerNumber(line, "validation:", where) != 0;
      } else if (line.rfind("#  Rank", 0) == 0 && t.size() >= 8 && t[1] == "Rank") {
        // "#  Rank  0 Group  0 Pid  123 on host device  0 [0000:04:00] NVIDIA H100 80GB HBM3"
        const auto on = std::find(t.begin(), t.end(), "on");
        if (on == t.end() || on + 1 == t.end()) TPB_THROW(UsageError, where << ": a rank line without its host");
        const auto bracket = std::find_if(on, t.end(), [](const std::string& s) { return !s.empty() && s[0] == '['; });
        std::string gpu;
        for (auto k = bracket == t.end() ? t.end() : bracket + 1; k != t.end(); ++k) gpu += (gpu.empty() ? "" : " ") + *k;
        if (test.ranks >= kMaxRanks) TPB_THROW(UsageError, where << ": more than " << kMaxRanks << " ranks");
        test.devices.emplace_back(printableLine(*(on + 1)), printableLine(gpu));
        test.ranks = static_cast<int>(test.devices.size());
      } else {
        Columns c;
        if (columnsOf(t, c)) {
          columns = c;
          haveColumns = true;
        }
      }
      continue;
    }
    long long bytes = 0;
    if (!integerToken(t[0], 0, kMaxCount, bytes)) continue;  // not a row: NCCL INFO lines, launcher noise
    if (!haveColumns) TPB_THROW(UsageError, where << ": a result row before the table's column header");
    if (!test.unsupported.empty()) {
      left.add(test.unsupported);
      continue;
    }
    if (test.op.empty())
      TPB_THROW(UsageError, where << ": the file does not say which test it is (no '# Collective test starting' line): give --op");
    if (test.ranks < 1) TPB_THROW(UsageError, where << ": no '#  Rank' lines before the table: cannot tell the rank count");
    if (test.iters < 1) TPB_THROW(UsageError, where << ": no '# nThread ... iters: N' line before the table");
    const std::size_t pre = columns.preamble.size(), per = columns.perPlacement;
    if (t.size() < pre + per) TPB_THROW(UsageError, where << ": " << t.size() << " columns, fewer than the header's");
    const std::size_t rest = t.size() - pre, slack = columns.timestamp ? 3 : 0;
    const bool both = rest >= 2 * per && rest - 2 * per <= slack;
    if (!both && rest - per > slack) TPB_THROW(UsageError, where << ": " << t.size() << " columns, more than the header's");
    std::string type = "float", redop = "sum";
    long long root = -1;
    for (std::size_t k = 1; k < pre; ++k) {
      if (columns.preamble[k] == "type") type = t[k];
      if (columns.preamble[k] == "redop") redop = t[k];
      if (columns.preamble[k] == "root" && !integerToken(t[k], -1, kMaxRanks - 1, root))
        TPB_THROW(UsageError, where << ": root '" << printableLine(t[k]) << "' is not a rank");
    }
    if (const std::string why = leftOutWhy(test, type, redop, bytes); !why.empty()) {
      left.add(why);
      continue;
    }
    const std::optional<int> rootOf = rootOfRow(test, root, [&](const std::string& expected) {
      TPB_THROW(UsageError, where << ": root " << root << " is not " << expected);
    });
    if (out.points.size() + 2 > kMaxPoints) TPB_THROW(UsageError, where << ": more than " << kMaxPoints << " points");
    noteDevices(out.meta, test);
    if (both) out.points.push_back(record(test, bytes, rootOf, false, placementOf(t, pre, columns, where), where));
    out.points.push_back(record(test, bytes, rootOf, true, placementOf(t, both ? pre + per : pre, columns, where), where));
  }
  finish(out, left, file);
  return out;
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
  checkOp(op, test.op, file);
  std::string command = "nccl-tests";
  for (std::size_t i = 0; i < args.size() && i < 256; ++i) command += " " + printableLine(args[i].str());
  out.meta.command = command;
  if (const auto v = optInteger(top, "nccl_version", 0, 1000000)) out.meta.nccl = ncclVersionText(*v);
  if (const auto s = optStr(top, "start_time")) out.meta.timestampUtc = printableLine(*s);
  const JsonIn config = top.at("config");
  test.iters = config.at("iterations").integer(1, 1LL << 31);
  test.warmup = config.at("warmup_iters").integer(0, 1LL << 31);
  if (const auto agg = optInteger(config, "aggregated_iterations", 1, 1LL << 20); agg && *agg > 1) test.iters *= *agg;
  if (const auto v = optInteger(config, "validation", 0, 1LL << 31)) test.validation = *v != 0;
  const JsonIn devices = top.at("devices");
  if (devices.size() == 0 || devices.size() > static_cast<std::size_t>(kMaxRanks)) devices.fail("1 to 65536 ranks");
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const JsonIn d = devices[i];
    d.object();
    test.devices.emplace_back(printableLine(d.at("hostname").str()), printableLine(optStr(d, "device_info").value_or("")));
  }
  test.ranks = static_cast<int>(devices.size());
  noteDevices(out.meta, test);
  const JsonIn results = top.at("results");
  if (results.size() > kMaxPoints / 2) results.fail("at most " + std::to_string(kMaxPoints / 2) + " rows");
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
  for (std::size_t i = 0; i < results.size(); ++i) {
    const JsonIn row = results[i];
    row.object();
    const std::string where = file + ": " + row.path();
    if (!test.unsupported.empty()) {
      left.add(test.unsupported);
      continue;
    }
    const long long bytes = static_cast<long long>(row.at("size").unsignedInteger(kMaxCount));
    const std::string type = row.find("type") ? row.at("type").str() : "float";
    const std::string redop = row.find("redop") ? row.at("redop").str() : "sum";
    long long root = -1;
    if (const auto r = row.find("root")) {
      const auto t = tokens(r->value().is_string() ? r->str() : r->value().dump());
      if (t.size() != 1 || !integerToken(t[0], -1, kMaxRanks - 1, root)) r->fail("a rank or -1");
    }
    if (const std::string why = leftOutWhy(test, type, redop, bytes); !why.empty()) {
      left.add(why);
      continue;
    }
    const std::optional<int> rootOf = rootOfRow(test, root, [&](const std::string& expected) { row.at("root").fail(expected); });
    Measured m;
    if (placement(row, "out_of_place", m)) out.points.push_back(record(test, bytes, rootOf, false, m, where + ".out_of_place"));
    Measured inPlace;
    if (placement(row, "in_place", inPlace)) out.points.push_back(record(test, bytes, rootOf, true, inPlace, where + ".in_place"));
  }
  finish(out, left, file);
  return out;
}

NcclTestsImport importNcclTests(const std::string& path, const std::string& op) {
  const RegularFile f("nccl-tests file", path);
  const auto bytes = f.readAll(kMaxNcclTestsBytes, "an nccl-tests log is a few MB at most");
  std::string text(bytes.begin(), bytes.end());
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    return parseNcclTestsJson(readJsonBounded(path, "nccl-tests file", kMaxNcclTestsBytes), path, op);
  }
  if (text.find('\0') != std::string::npos) TPB_THROW(UsageError, "nccl-tests file " << path << ": binary data, not nccl-tests' text output");
  return parseNcclTestsText(text, path, op);
}

}  // namespace tpb
