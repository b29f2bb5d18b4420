// report/report.cc — see report.h. The driver: load and merge the inputs (report/input.h), build
// every registered chart (report/chart.h, report/charts/), write its data and script and run
// gnuplot on it (report/gnuplot.h), then lay out the index page once (report/page.h) and write
// it as index.md and index.html, with the tables also as CSV.
#include "report/report.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <memory>
#include <set>
#include <vector>

#include "common/error.h"
#include "common/out_file.h"
#include "common/text_escape.h"
#include "report/chart.h"
#include "report/format.h"
#include "report/gnuplot.h"
#include "report/input.h"
#include "report/page.h"
#include "report/predictions.h"
#include "report/tables.h"

namespace tpb {

namespace fs = std::filesystem;
using namespace report;

namespace {

// Every file of the report is a new file renamed into place (common/out_file.h): a link planted
// in the directory under one of its names is replaced, never written through.
void writeText(const fs::path& path, const std::string& text) { writeFileAtomic(path.string(), text); }

// Moves a finished file from the scratch directory to its name in the report: rename(2)
// replaces whatever sits there (a link included) and follows nothing.
void moveInto(const fs::path& from, const fs::path& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    const int err = errno;
    TPB_THROW(Error, "report: cannot write '" << to.string() << "': " << std::strerror(err));
  }
}

// A directory of this process alone inside the report directory (mkdtemp: a name no one can
// predict, mode 0700, on the same file system so that moveInto is a rename), removed with what
// is left in it (remove_all removes links, it does not follow them).
// Each one holds a stamp file from its first moment, so that a later report knows a scratch
// directory left by a killed one from a user's directory of the same name.
constexpr char kScratchPrefix[] = ".tpbench-chart-";
constexpr char kScratchStamp[] = ".tpbench-scratch";
class ScratchDir {
 public:
  explicit ScratchDir(const fs::path& dir) : path_((dir / (std::string(kScratchPrefix) + "XXXXXX")).string()) {
    if (!::mkdtemp(path_.data())) {
      const int err = errno;
      TPB_THROW(Error, "report: cannot create a directory in '" << dir.string() << "': " << std::strerror(err));
    }
    writeFileAtomic((fs::path(path_) / kScratchStamp).string(), "tpbench report scratch\n");
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  fs::path path() const { return path_; }

 private:
  std::string path_;
};

void prepareOutDir(const std::string& outDir) {
  if (outDir.empty()) TPB_THROW(UsageError, "report: no output directory given (-o DIR)");
  std::error_code ec;
  const fs::path dir(outDir);
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    TPB_THROW(UsageError,
              "report: cannot write '" << outDir << "': it exists and is not a directory");
  createDirectories("report", outDir);
  // Permission bits do not say it all (read-only mounts; root ignores them): try a file.
  const fs::path probe = dir / (".tpbench-write-test." + std::to_string(::getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    TPB_THROW(UsageError, "report: cannot write in '" << outDir << "': " << std::strerror(err));
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

// The files a chart writes: <id> with each of these.
constexpr const char* kChartExtensions[] = {".png", ".svg", ".gp", ".dat"};

// Whether `name` is a file a chart writes (<id>.png, .svg, .gp, .dat of a registered chart or of
// `extraIds`).
bool chartFileName(const std::string& name, const std::vector<std::string>& extraIds = {}) {
  const auto dot = name.rfind('.');
  if (dot == std::string::npos) return false;
  const std::string ext = name.substr(dot), id = name.substr(0, dot);
  if (std::none_of(std::begin(kChartExtensions), std::end(kChartExtensions), [&](const char* e) { return ext == e; }))
    return false;
  if (std::find(extraIds.begin(), extraIds.end(), id) != extraIds.end()) return true;
  const auto charts = registeredCharts();
  return std::any_of(charts.begin(), charts.end(), [&](const ChartDef& d) { return d.id == id; });
}

// Removes the scratch directories of a report killed mid-chart (the caller holds the directory's
// lock, so none is in use), and only what such a report put there: a directory named as mkdtemp
// names them (never a link) holding the stamp, whose entries are chart files and the stamp alone,
// each unlinked by name (a link is removed, not followed). A directory of that name holding
// anything else is a user's, and stays as it is.
void removeLeftoverScratch(const fs::path& dir, const std::vector<std::string>& extraIds) {
  const std::string prefix = kScratchPrefix;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() != prefix.size() + 6 || name.compare(0, prefix.size(), prefix) != 0) continue;
    if (!std::all_of(name.begin() + prefix.size(), name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)); }))
      continue;
    std::error_code ignored;
    if (!fs::is_directory(e.symlink_status(ignored))) continue;
    if (!fs::is_regular_file(fs::symlink_status(e.path() / kScratchStamp, ignored))) continue;
    std::vector<fs::path> files;
    bool onlyOurs = true;
    for (const auto& f : fs::directory_iterator(e.path(), ignored)) {
      const std::string n = f.path().filename().string();
      const bool file = !fs::is_directory(f.symlink_status(ignored));
      if (!file || (n != kScratchStamp && !chartFileName(n, extraIds))) onlyOurs = false;
      files.push_back(f.path());
    }
    if (!onlyOurs) continue;
    for (const auto& f : files) fs::remove(f, ignored);
    fs::remove(e.path(), ignored);  // rmdir: only once empty
  }
}

// The mark of a directory tpbench's report or history writes into: only then may a later run
// replace the files there. Directories written before the mark (index.md or history.md as
// tpbench writes them) count as tpbench's.
constexpr char kReportMark[] = ".tpbench-report";

bool startsWith(const fs::path& file, const std::string& text) {
  struct stat st {};
  if (::lstat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  std::string head(text.size(), '\0');
  const ssize_t n = ::read(fd, head.data(), head.size());
  ::close(fd);
  return n == static_cast<ssize_t>(text.size()) && head == text;
}

// Whether `dir` may be written: its mark, a report of tpbench's from before the mark, or none of
// `names` there; throws the refusal, naming the file, otherwise. Writes nothing. True when the
// mark is there already.
bool checkOutDir(const fs::path& dir, const std::vector<std::string>& names) {
  const fs::path mark = dir / kReportMark;
  struct stat st {};
  if (::lstat(mark.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode))
      TPB_THROW(UsageError, "-o: " << mark.string() << " is not a regular file: tpbench's mark is not there");
    return true;
  }
  if (startsWith(dir / "index.md", "# tpbench report") || startsWith(dir / "history.md", "### tpbench history")) return false;
  for (const auto& n : names)
    if (::lstat((dir / n).c_str(), &st) == 0)
      TPB_THROW(UsageError, "-o: " << (dir / n).string() << " is there and tpbench did not write it (the directory has no "
                                   << kReportMark << "); give a new or empty directory, or move it away");
  return false;
}

// Claims `dir` for a report or history that writes `names` there (the caller holds its lock):
// checkOutDir, then the mark where it is missing. tpbench never replaces what it did not write.
void claimOutDir(const fs::path& dir, const std::vector<std::string>& names) {
  if (checkOutDir(dir, names)) return;
  writeFileAtomic((dir / kReportMark).string(),
                  "This directory holds a tpbench report or history; tpbench replaces its files.\n");
}

// Every name a report writes into its directory.
std::vector<std::string> reportFileNames() {
  std::vector<std::string> names = {"index.md", "index.html", "runs.csv", "allreduce.csv", "overlap.csv", "predictions.csv"};
  for (const ChartDef& def : registeredCharts())
    for (const char* ext : kChartExtensions) names.push_back(def.id + ext);
  return names;
}

struct Outcome {
  Chart chart;
  bool drawn = false;
  std::string reason;         // why not drawn
  bool filesWritten = false;  // .dat/.gp exist
};

// Removes the files an earlier report or history drew for chart `id` in dir: they would
// contradict this one (remove(2) takes away a link, it does not follow it).
void removeChartFiles(const fs::path& dir, const std::string& id) {
  for (const char* ext : kChartExtensions) {
    std::error_code ec;
    fs::remove(dir / (id + ext), ec);
  }
}

// Writes c's .dat and .gp and draws them, then moves them (and the PNG and SVG when drawn) into
// dir; "" when drawn, else why not. gnuplot opens its outputs itself, following whatever sits
// at a name, so it works in a scratch directory no one else can write to.
std::string draw(const Chart& c, const fs::path& dir, const std::string& gnuplot,
                 const std::string& noGnuplot) {
  const ScratchDir scratch(dir);
  const fs::path work = scratch.path();
  writeText(work / (c.id + ".dat"), c.dat);
  writeText(work / (c.id + ".gp"), c.gp);
  std::string why = gnuplot.empty() ? noGnuplot : runGnuplot(gnuplot, work.string(), c.id + ".gp");
  for (const char* ext : {".png", ".svg"}) {
    struct stat st {};
    if (why.empty() && (::lstat((work / (c.id + ext)).c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0))
      why = std::string("gnuplot wrote no ") + c.id + ext;
  }
  std::vector<std::string> made = {".dat", ".gp"};
  if (why.empty()) made.insert(made.end(), {".png", ".svg"});
  for (const std::string& ext : made) moveInto(work / (c.id + ext), dir / (c.id + ext));
  return why;
}

// ------------------------------------------------------------------------------------------
// The index page
// ------------------------------------------------------------------------------------------

void introduce(Page& page, const std::vector<Input>& inputs) {
  Inlines intro = {text("From " + std::to_string(inputs.size()) + " results file" +
                        (inputs.size() > 1 ? "s" : "") + ": ")};
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (i) intro.push_back(text(", "));
    intro.push_back(code(inputs[i].path));
    intro.push_back(text(" (" + std::to_string(inputs[i].runs) + " runs, " +
                         std::to_string(inputs[i].allreduce) + " allreduce points" +
                         (inputs[i].predictions ? ", " + std::to_string(inputs[i].predictions) + " predictions" : "") +
                         ")"));
  }
  intro.push_back(text(". Only records with status "));
  intro.push_back(code("ok"));
  intro.push_back(text(" are charted; repeats are combined by their median."));
  page.heading(1, {text("tpbench report")});
  page.paragraph(intro, ParaStyle::Plain, true);
}

// The list of charts drawn, with their readings; then those not drawn, in a table of their own
// after one line saying how many and why (what each needs is not a failure: the inputs hold
// other runs); then one section per chart that has something to show. A chart skipped for lack
// of data is said once, in the second list.
void chartSections(Page& page, const std::vector<Outcome>& outs) {
  page.heading(2, {text("Charts")});
  Table drawn, notDrawn;
  drawn.header = {"chart", "id", "reading"};
  notDrawn.header = {"chart", "id", "not drawn: what it needs"};
  for (const auto& o : outs) {
    const Chart& c = o.chart;
    const Cell title = o.filesWritten ? Cell({link(c.title, "#" + c.id)}) : Cell(c.title);
    if (o.drawn)
      drawn.rows.push_back({title, Cell({code(c.id)}), c.reading});
    else
      notDrawn.rows.push_back({title, Cell({code(c.id)}), Cell(o.reason)});
  }
  if (!drawn.rows.empty()) page.table(drawn);
  if (!notDrawn.rows.empty()) {
    page.paragraph({text(std::to_string(notDrawn.rows.size()) + " of " + std::to_string(outs.size()) +
                         " charts not drawn: each needs runs or files these inputs do not hold, as its line says.")},
                   ParaStyle::Note);
    page.table(notDrawn);
  }
  for (const auto& o : outs) {
    if (!o.filesWritten) continue;
    const Chart& c = o.chart;
    page.heading(3, {text(c.title + " ("), code(c.id), text(")")}, c.id);
    if (!c.subtitle.empty()) page.paragraph({text(c.subtitle)}, ParaStyle::Note);
    if (o.drawn) page.image(c.id + ".png", c.title, c.id + ".svg");
    if (!c.reading.empty()) page.paragraph({bold("Reading:"), text(" " + c.reading)});
    if (!o.drawn) page.paragraph({bold("Not drawn:"), text(" " + o.reason)}, ParaStyle::Warning);
    if (o.filesWritten) {
      Inlines files = {text("Files: ")};
      if (o.drawn) {
        files.insert(files.end(), {link("PNG", c.id + ".png"), text(" · "),
                                   link("SVG", c.id + ".svg"), text(" · ")});
      }
      files.insert(files.end(), {link("data", c.id + ".dat"), text(" · "),
                                 link("gnuplot script", c.id + ".gp")});
      page.paragraph(files, ParaStyle::Plain, true);
    }
  }
}

// The collectives at a glance, where some op was measured with two or more algorithms.
void glanceSection(Page& page, const std::vector<GlanceTable>& glance) {
  if (glance.empty()) return;
  page.heading(2, {text("Collectives at a glance")});
  page.paragraph({text("Per N and size, the fastest algorithm by median time and its bus bandwidth; every "
                       "algorithm's median time as a multiple of the fastest one's. \"a ≈ b (within noise)\": b's "
                       "min–max range over the iterations overlaps a's, so a's lead is not beyond the measured "
                       "spread.")});
  for (const auto& g : glance) {
    page.heading(3, {text(g.title)});
    page.table(g.table);
  }
}

Page indexPage(const std::vector<Input>& inputs, const std::vector<Outcome>& outs, const Table& runs,
               const Table& ar, const Table& reference, const Table& stragglers, const Table* overlap,
               const std::vector<GlanceTable>& glance, const Table& predictions) {
  Page page("tpbench report");
  introduce(page, inputs);
  chartSections(page, outs);
  if (overlap) {
    page.heading(2, {text("Communication hidden behind computation (traces)")});
    page.paragraph({text("Per traced run, per step and mean over ranks (also in "), link("overlap.csv", "overlap.csv"),
                    text("). Communication beside the host is work the host thread does not wait in while it "
                         "runs: ddp's bucket allreduces, from their launch in a backward hook to the library's "
                         "completion. The hidden share is the part of it that overlaps the same rank's forward or "
                         "backward; the host's own time in communication (a blocking allreduce, send/recv, "
                         "waiting for the buckets) is what the step pays.")});
    page.table(*overlap);
  }
  page.heading(2, {text("Training runs")});
  page.paragraph({text("One row per configuration and status; repeats merged by median (also in "),
                  link("runs.csv", "runs.csv"),
                  text("); samples/s min–max is the range over the repeats (— for one). Scaling "
                       "efficiency = samples/s ÷ (N × the same strategy's samples/s at N=1).")});
  page.table(runs);
  page.heading(2, {text("Allreduce")});
  page.paragraph({text("Median over repeated points (also in "),
                  link("allreduce.csv", "allreduce.csv"),
                  text("); min–max µs: the fastest and the slowest timed iteration of any of them. Points "
                       "imported from nccl-tests or rccl-tests keep the log's own time, a mean per iteration, and "
                       "say where they ran in the device column.")});
  page.table(ar);
  if (!reference.rows.empty()) {
    page.heading(2, {text("Against published figures")});
    page.paragraph({text("Each GPU allreduce curve (tpbench's own per algorithm, an imported file's per GPU; each per "
                         "N, nodes and element type): its plateau, the median busbw at its three largest sizes from "
                         "256 MiB up, against the published nccl-tests figure for its platform and algorithm; under "
                         "70 % of a measured figure is flagged FAR BELOW. Line rates bound ring and tree algorithms "
                         "(NVLS reduces inside the switch and passes them). Across nodes the figure is the NICs per "
                         "node times the per-NIC one, where the file says both (tpbench import --nics, --nic). "
                         "Figures and sources: docs/reports.md, \"What a platform should reach\".")});
    page.table(reference);
  }
  glanceSection(page, glance);
  if (!predictions.rows.empty()) {
    page.heading(2, {text("Step model")});
    page.paragraph({text("Steps predicted by "), code("tpbench predict"), text(" (also in "),
                    link("predictions.csv", "predictions.csv"),
                    text("): from one rank's step measured on this CPU (alone, and beside N-1 replicas as a run's "
                         "other ranks) or built from FLOPs on a GPU preset, and an allreduce fitted from collective "
                         "results or taken from link presets. Efficiency: one rank's step alone over the step at N. "
                         "Where ok runs in the inputs measured the same point (strategy, workload, batch, N, bucket, "
                         "on the CPU), their median wall time per step after the first epoch, the number of runs "
                         "and the prediction's error against it. The model leaves out compute and communication "
                         "slowing each other, the buckets' copies and stragglers: docs/strategies.md, \"Step model\".")});
    page.table(predictions);
  }
  if (!stragglers.rows.empty()) {
    page.heading(2, {text("Stragglers")});
    page.paragraph({text("A rank that held a point back: in a training run, the rank whose compute was 1.2x or more "
                         "the median of the other computing ranks' in most epochs (its median step on its CPU clock "
                         "where the record has it; a rank slower only on the wall clock waited for a core, and the "
                         "row says so); in a collective point, the rank that was the slowest in most timed "
                         "iterations with a median 1.2x or more the others'. Beside either, a machine that was busy: "
                         "other processes used cores the point's ranks needed (its record's machine), so its timings "
                         "say what the machine did, and the at-a-glance tables name no fastest beside it.")});
    page.table(stragglers);
  }
  page.heading(2, {text("Inputs")});
  for (const auto& in : inputs) {
    page.heading(3, {code(in.path)});
    page.table(metaTable(in.meta));
  }
  return page;
}

}  // namespace

std::string report::writeChart(const Chart& c, const std::string& outDir, const std::string& gnuplot,
                               const std::vector<std::pair<std::string, std::string>>& extraFiles) {
  prepareOutDir(outDir);
  const fs::path dir(outDir);
  const OutLock lock("-o", outDir, (dir / ".tpbench-report.lock").string());
  std::vector<std::string> names;
  for (const auto& kv : extraFiles) names.push_back(kv.first);
  for (const char* ext : kChartExtensions) names.push_back(c.id + ext);
  claimOutDir(dir, names);
  removeLeftoverScratch(dir, {c.id});
  for (const auto& [name, text] : extraFiles) writeText(dir / name, text);
  removeChartFiles(dir, c.id);
  if (!c.hasData()) return c.reason;
  return draw(c, dir, findGnuplot(gnuplot), gnuplot.empty() ? "gnuplot disabled" : "gnuplot not found");
}

void report::checkChartDir(const std::string& outDir, const std::vector<std::string>& names) {
  std::error_code ec;
  if (!outDir.empty() && fs::is_directory(fs::symlink_status(outDir, ec))) checkOutDir(outDir, names);
}

// --where: keeps the runs whose config holds every KEY=VALUE (VALUE as the config writes it:
// 32, resnet, 0.5). A KEY no run has, or a filter that leaves no run, is refused naming it.
static void keepRunsWhere(std::vector<Run>& runs, const std::vector<std::string>& where) {
  for (const std::string& w : where) {
    const std::size_t eq = w.find('=');
    if (eq == std::string::npos || eq == 0)
      TPB_THROW(UsageError, "--where: '" << printableLine(w).substr(0, 64) << "' is not KEY=VALUE");
    const std::string key = w.substr(0, eq), value = w.substr(eq + 1);
    std::set<std::string> values;
    for (const Run& r : runs)
      if (r.config.contains(key)) values.insert(valueText(r.config[key]));
    if (values.empty())
      TPB_THROW(UsageError, "--where: no run's config has " << printableLine(key).substr(0, 64));
    if (!values.count(value)) {
      std::string all;
      for (const std::string& v : values) all += (all.empty() ? "" : ", ") + v;
      TPB_THROW(UsageError, "--where " << printableLine(w).substr(0, 64) << ": no run has it; " << key
                                       << " is one of " << printableLine(all).substr(0, 200));
    }
    runs.erase(std::remove_if(runs.begin(), runs.end(),
                              [&](const Run& r) { return !r.config.contains(key) || valueText(r.config[key]) != value; }),
               runs.end());
  }
}

ReportSummary writeReport(const ReportOptions& opt) {
  if (opt.inputs.empty() && opt.traces.empty()) TPB_THROW(UsageError, "report: no results or trace file given");
  // Load every input before touching the output directory: a bad input leaves nothing behind.
  Inputs in = loadInputs(opt.inputs, opt.styles);
  keepRunsWhere(in.runs, opt.where);
  in.traces = loadTraces(opt.traces);
  prepareOutDir(opt.outDir);
  const fs::path dir(opt.outDir);
  // Two reports into one directory would interleave their files: the second is refused.
  const OutLock lock("-o", opt.outDir, (dir / ".tpbench-report.lock").string());
  claimOutDir(dir, reportFileNames());
  removeLeftoverScratch(dir, {});

  const std::string gnuplot = findGnuplot(opt.gnuplot);
  const std::string noGnuplot = opt.gnuplot.empty() ? "gnuplot disabled" : "gnuplot not found";
  ReportSummary summary;
  std::vector<Outcome> outcomes;
  for (const ChartDef& def : registeredCharts()) {
    Outcome o;
    o.chart = buildChart(def, in);
    const Chart& c = o.chart;
    removeChartFiles(dir, c.id);
    o.reason = c.reason;
    if (c.hasData()) {
      o.reason = draw(c, dir, gnuplot, noGnuplot);
      o.filesWritten = true;
      o.drawn = o.reason.empty();
    }
    if (o.drawn) {
      summary.drawn.push_back(c.id);
    } else {
      summary.skipped.emplace_back(c.id, o.reason);
    }
    outcomes.push_back(std::move(o));
  }

  const Table runTable = runsTable(in.runs, in.styles);
  const Table arTable = collectiveTable(in.points, in.styles);
  writeText(dir / "runs.csv", csv(runTable));
  writeText(dir / "allreduce.csv", csv(arTable));
  std::unique_ptr<Table> overlap;
  if (!in.traces.empty()) {
    std::vector<Overlap> overlaps;
    for (const TracedRun& r : in.traces) overlaps.push_back(overlapOf(r));
    overlap = std::make_unique<Table>(overlapTable(in.traces, overlaps));
    writeText(dir / "overlap.csv", csv(*overlap));
    for (std::size_t i = 0; i < in.traces.size(); ++i) {
      const TracedRun& r = in.traces[i];
      const Overlap& o = overlaps[i];
      if (!o.noHiddenFraction().empty()) continue;  // the table says n/a and why
      summary.overlap.push_back(overlapLine(r.label, o));
    }
  }
  const Table predictions = predictionTable(matchPredictions(in.predictions, in.runs));
  if (!predictions.rows.empty()) {
    writeText(dir / "predictions.csv", csv(predictions));
  } else {
    std::error_code ec;
    fs::remove(dir / "predictions.csv", ec);  // an earlier report's would contradict this one
  }
  const Page page = indexPage(in.files, outcomes, runTable, arTable, verdictTable(in),
                              stragglerTable(in.runs, in.points), overlap.get(), glanceTables(in.points, in.styles),
                              predictions);
  writeText(dir / "index.md", page.markdown());
  writeText(dir / "index.html", page.html());
  return summary;
}

}  // namespace tpb
