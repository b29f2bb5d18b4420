// record/compare.h — `tpbench compare BASE.json NEW.json`: matches points by configuration and
// says which regressed.
//
// Timings (epoch time, samples/s, allreduce busbw) regress when they are slower by more than
// `threshold` (relative) and, where both sides hold >= 5 repetitions, a two-sided Mann-Whitney
// U test gives p < alpha. Accuracy and loss are deterministic given the seed on one platform:
// any change beyond `accTolerance` is a regression (accuracy: absolute difference of the
// fraction; loss: relative difference), and so is a number in BASE that is null (or NaN) in NEW.
// A point that ran in BASE but failed or is missing in NEW is a regression too; a run that
// trained on zero steps or zero samples counts as failed, and a NEW file in which no matched
// point measured anything cannot pass. Exact traffic counts (bytes and messages per rank) must
// be equal: any change is a regression, and so is a count in BASE that NEW did not record.
//
// Points are matched by value (record/records.h: RunConfig ==, numbers compared numerically, so
// 1 and 1.0 match): every config field but repeat_index, max_steps included (a file without it
// means -1, no limit); collectives by op, algo, transport, device, n_gpus, bytes, in_place and root;
// predictions (`tpbench predict --out`) by their point (strategy, workload, batch, N, bucket),
// whatever they were predicted from: their predicted step is a timing of one value a side
// (threshold only), and a change of what it was predicted from is noted beside it.
// When nothing matches, the error names the first field that differs from the nearest point.
//
// One verdict per point: a slow point is one regression, whichever of its timings show it; a
// run's verdict comes with its compute/communication split, to say which of the two moved.
// Every median printed comes with its min-max spread where the values differ (the repeats; for
// a collective also its timed iterations), so a reader sees whether a change is within noise.
//
// Scaled (`--scale_by_sgemm`, what CI's gate runs against a baseline from another machine): a
// run's timings are judged after dividing NEW's times (multiplying its rates) by the ratio of
// the two files' meta.sgemm_gflops, one thread's matrix product on each machine, the kind of
// work a training step's time is made of. The medians printed stay as measured. Collectives and
// predictions are not scaled: a collective on CPU is bound by memory and scheduling, which the
// product does not measure.
//
// Paired (`--paired`, what scripts/ab-gate.sh runs): BASE and NEW are directories of rounds, the
// files of one name in both having run side by side (A B, then B A, ...), so a machine's slow
// minute hits both. Every other check reads the rounds merged; a timing's slowdown is the median
// over rounds of NEW's time over BASE's in that round, and its test a one-sided Wilcoxon
// signed-rank test of the rounds' log ratios (>= minRepeats rounds), not the U test.
#pragma once

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tpb {

struct CompareOptions {
  std::string basePath, newPath;
  double threshold = 0.10;
  double alpha = 0.05;
  double accTolerance = 0.001;
  int minRepeats = 5;  // repetitions each side needs for the U test (paired: rounds)
  bool paired = false;  // basePath, newPath are directories of rounds
  // Judge a training run's timings as if NEW had run on BASE's machine: NEW's times divided by
  // (samples/s multiplied by) BASE's meta.sgemm_gflops over NEW's. For a baseline recorded on
  // another machine (CI's gate). Both files must carry it. Not with `paired` (one machine).
  bool scaleBySgemm = false;
  // Judge the timings of points whose record says the machine was busy beside them
  // (machine.busy); by default they are shown, noted, and never called a regression.
  bool allowBusy = false;
  // Settings of a run's config (its JSON keys: batch_size, slow_ranks, ...) matched whatever their
  // value: `--ignore slow_ranks` compares a straggler run with its run without one. Two points of
  // one file that differ only in them are refused (they would pool as repeats).
  std::vector<std::string> ignore;
};

// --scale_by_sgemm: the two machines' compute speeds.
// The largest ratio of two machines' sgemm rates that --scale_by_sgemm accepts: CI's machines
// measured 3.5-5.8x apart from the baseline's (docs/reports.md), and a ratio past this one would
// excuse a slowdown the gate exists to catch.
inline constexpr double kSgemmScaleMax = 8.0;

struct SgemmScale {
  double baseGflops = 0, newGflops = 0;
  // How many times longer NEW's machine takes for the same compute (> 1: NEW's is slower).
  double factor() const { return baseGflops / newGflops; }
};

// One metric of one point, measured on both sides.
struct Comparison {
  std::string point;   // readable key, e.g. "run ddp N=2 batch=64 train_size=8192"
  std::string metric;  // "samples_per_s", "epoch_s", "busbw_gbps", "final_test_accuracy", ...
  std::string kind;    // "timing", "accuracy", "exact" (traffic counts), "status"
  double base = 0, now = 0;
  // The spread behind each median: the smallest and the largest value over the repeats (a
  // collective's busbw: of its fastest and slowest timed iteration too); NaN where not measured.
  double baseMin = NAN, baseMax = NAN, newMin = NAN, newMax = NAN;
  double change = 0;   // relative change new/base - 1 (accuracy: absolute difference)
  double slowdown = 0; // timing: how much slower NEW is (+0.12 = 12 % slower); else 0
  int nBase = 0, nNew = 0;
  double p = -1;       // U-test p-value, -1 when not computed
  bool regression = false;
  std::string note;
};

// A run's seconds per epoch spent computing and communicating (medians over the repeats), on
// both sides: which of the two a change of the epoch time came from. Not a verdict of its own.
struct TimeSplit {
  double computeBase = 0, computeNew = 0, commBase = 0, commNew = 0;
};

// Every metric of one point and the point's one verdict: a regression when any metric is.
struct PointComparison {
  std::string point;
  std::vector<Comparison> metrics;
  std::optional<TimeSplit> split;  // runs whose epochs recorded compute_s and comm_s
  bool regression() const;
  // The point's timing slowdown: the largest of its timing metrics' (NaN without one).
  double slowdown() const;
  const Comparison* metric(const std::string& name) const;
};

struct CompareResult {
  std::vector<PointComparison> points;  // regressions first
  std::size_t matched = 0;
  std::size_t rounds = 0;  // paired: the rounds read
  std::optional<SgemmScale> scale;  // --scale_by_sgemm
  bool regressed() const;
  std::size_t regressions() const;  // points, not metrics
};

// Throws UsageError for unreadable files, a wrong schema or nothing in common; paired, also for
// a round file in only one directory, a link or a directory without rounds.
CompareResult compareResults(const CompareOptions& opt);

// "communication" or "compute": the part whose seconds per epoch grew more ("" when neither grew).
std::string slowerPart(const TimeSplit& s);

// One point of one results file with the median over its repeats of each metric it measured
// (timings: samples_per_s, epoch_s, busbw_gbps; accuracy: final_test_accuracy,
// final_train_loss): what `tpbench history` follows from file to file. Points are labelled and
// told apart as compare matches them.
struct PointMedians {
  std::string point;
  std::map<std::string, double> metrics;
};
class ResultsFile;
std::vector<PointMedians> pointMedians(const ResultsFile& f);

// Renders as an aligned table ("text"), a Markdown table ("markdown") or JSON ("json").
std::string formatComparison(const CompareResult& r, const CompareOptions& opt, const std::string& format);

}  // namespace tpb
