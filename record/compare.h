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
// means -1, no limit); collectives by op, algo, transport, device, n_gpus, bytes, in_place and root.
#pragma once

#include <string>
#include <vector>

namespace tpb {

struct CompareOptions {
  std::string basePath, newPath;
  double threshold = 0.10;
  double alpha = 0.05;
  double accTolerance = 0.001;
  int minRepeats = 5;  // repetitions each side needs for the U test
};

struct Comparison {
  std::string point;   // readable key, e.g. "run ddp N=2 batch=64 train_size=8192"
  std::string metric;  // "samples_per_s", "epoch_s", "busbw_gbps", "final_test_accuracy", ...
  std::string kind;    // "timing", "accuracy", "exact" (traffic counts), "status"
  double base = 0, now = 0;
  double change = 0;   // relative change new/base - 1 (accuracy: absolute difference)
  double slowdown = 0; // timing: how much slower NEW is (+0.12 = 12 % slower); else 0
  int nBase = 0, nNew = 0;
  double p = -1;       // U-test p-value, -1 when not computed
  bool regression = false;
  std::string note;
};

struct CompareResult {
  std::vector<Comparison> rows;  // regressions first
  std::size_t matched = 0;
  bool regressed() const;
};

// Throws UsageError for unreadable files, a wrong schema or nothing in common.
CompareResult compareResults(const CompareOptions& opt);

// Renders as an aligned table ("text"), a Markdown table ("markdown") or JSON ("json").
std::string formatComparison(const CompareResult& r, const CompareOptions& opt, const std::string& format);

}  // namespace tpb
