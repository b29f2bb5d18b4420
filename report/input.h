// report/input.h — the report's view of results files: each training run and allreduce point as
// a small struct filled from record/'s typed records (ResultsFile::load: the project's one
// results parser), with unmeasured values as NaN; and the style of every series they name
// (report/style.h), from the records' entry fields or the caller's registry.
#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "record/prediction_record.h"
#include "record/records.h"

#include "report/style.h"
#include "report/trace_input.h"

namespace tpb::report {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Median and mean of the finite values; NaN when there is none.
double median(std::vector<double> xs);
double meanOf(const std::vector<double>& xs);

struct Run {
  nlohmann::json config;  // the run's config object, for slicing by its fields
  RunConfig settings;     // the same, typed (a setting the record lacks reads as its default)
  std::string strategy;
  int n = 0;
  int dataRanks = 0;  // ranks that consume training data (the record's data_ranks, else n)
  long long batch = 0;
  long long trainSize = 0;
  long long epochsRequested = 0;
  std::string status;
  std::string error;
  std::vector<double> wall, compute, comm, accuracy;  // per completed epoch; NaN where null
  std::vector<double> steps;  // optimizer steps per completed epoch; NaN where the record lacks them
  // Model parallel runs, per epoch (empty elsewhere): measured bubble and GPipe's formula.
  std::vector<double> bubble, bubbleFormula;
  double samplesPerS = kNaN;
  double finalAccuracy = kNaN;
  double scalingEfficiency = kNaN;  // as recorded; NaN when null
  std::string straggler;  // record/stragglers.h's text (or its core wait's, or the busy machine's); "" when nothing held the run back
  bool busy = false;      // its record's machine.busy: other processes took cores it needed
  bool ok() const { return status == "ok"; }
  double meanWall() const { return meanOf(wall); }
  // The one per-step time of a run, for every chart and table: the median over its epochs (after
  // the first, which warms up, where there are more) of the epoch's `of` (wall, comm: one of the
  // vectors above) over its optimizer steps (schema 2: each step of the model once). NaN where
  // no epoch has both.
  double perStepS(const std::vector<double>& of) const;
};

struct CollectivePoint {
  std::string op = "allreduce";  // the collective (record field "op")
  bool inPlace = true;
  std::string algo, transport, device, status, error;
  std::string carrier;  // what carried its data (the record's, else its transport)
  int n = 0;
  long long bytes = 0;
  double medianUs = kNaN, busbw = kNaN;
  double minUs = kNaN, maxUs = kNaN;  // the fastest and slowest timed iteration
  // Where its file says it ran: the first GPU's name ("" when none is named) and the nodes.
  std::string gpu;
  long long nodes = 1;
  std::string straggler;  // record/stragglers.h's text (or the busy machine's); "" when nothing held the point back
  bool busy = false;      // its record's machine.busy
  std::string dtype = "float32", redop = "sum";  // the record's element type and reduction
  // Imported from nccl-tests or rccl-tests (`tpbench import`): not measured by this tpbench, so
  // a curve of its own per file, and no part of a same-machine comparison.
  bool imported = false;
  std::size_t file = 0;       // the index of the input file it came from (Inputs::files)
  std::string ncclAlgo;       // NCCL_ALGO where an imported log set it
  int nicsPerNode = 0;        // where an imported point records it (1-64), else 0
  std::string nic;            // the NIC kind an imported point records, else ""
  bool ok() const { return status == "ok"; }
  // Where it ran, as a legend or a table says it: "8 ranks, 2 nodes, NVIDIA H100 80GB HBM3" for
  // an imported point (nodes and GPU where known), "" for tpbench's own.
  std::string whereText() const;
  // The bus bandwidth of the slowest and of the fastest iteration (busbw scales with 1/time);
  // NaN where the times are missing.
  double busbwLo() const { return maxUs > 0 ? busbw * medianUs / maxUs : kNaN; }
  double busbwHi() const { return minUs > 0 ? busbw * medianUs / minUs : kNaN; }
};

struct Input {
  std::string path;
  std::vector<std::pair<std::string, std::string>> meta;  // field, value as text
  std::size_t runs = 0, allreduce = 0, predictions = 0;
};

// Every input's records, merged in the order given.
struct Inputs {
  std::vector<Input> files;
  std::vector<Run> runs;
  std::vector<CollectivePoint> points;
  std::vector<PredictionRecord> predictions;  // `tpbench predict --out` (record/prediction_record.h)
  std::vector<TracedRun> traces;  // from --trace files (report/trace_input.h); empty without
  Styles styles;  // of every strategy and algorithm the records name
};

// Reads and merges the results files; `registry` styles the series whose records predate the
// entry fields (may be null). Throws ResultsFile::load's tpb::UsageError when a file cannot be
// read or is not a valid results file ("x.json: runs[3].config.n_gpus: expected ...").
Inputs loadInputs(const std::vector<std::string>& paths, const StyleLookup& registry = nullptr);

// A config or meta value as a person reads it: strings bare, arrays joined by ", " ("(none)"
// when empty), null as "null", anything else as JSON.
std::string valueText(const nlohmann::json& v);

}  // namespace tpb::report
