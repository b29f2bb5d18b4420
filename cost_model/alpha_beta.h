// cost_model/alpha_beta.h — the α-β (latency-bandwidth, "Hockney") cost model behind `tpbench model`:
// fitted from collective benchmark records, predicting other sizes and rank counts from each
// algorithm's step formula, and projecting onto published link figures. No CLI, no I/O.
//
// A collective of S bytes on N ranks takes T = a(N)·α + b(N)·S·β, where α is the cost of one
// step (latency per message hop) and β the cost of one byte over one link, and a(N), b(N) are
// the algorithm's step and byte counts along its critical path: the formula its registry entry
// states (core/algo_cost.h), beside the exact traffic the traffic tests check.
//
// Measured: per (op, algorithm, transport, device, N, placement) the fit T(S) = A + B·S over the
// sizes, by iteratively reweighted least squares on relative residuals (a 1 KiB and a 64 MiB
// point count alike) with Huber weights (one disturbed size cannot drag the line), A, B >= 0.
// Then α = A / a(N), β = B / b(N).
// Projected: everything computed from α, β through a(N), b(N) at an N or S not measured, and
// everything computed from a LinkPreset.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/algo_cost.h"
#include "record/records.h"

namespace tpb::model {

using Cost = tpb::Cost;
using Formula = tpb::CostFormula;

// The formula (op, algo)'s entry in this build's registry states; nullopt for an algorithm
// without one or not registered here (it can still be fitted, not predicted at another N).
std::optional<Formula> formulaOf(const std::string& op, const std::string& algo);

struct Sample {
  double bytes = 0, us = 0;
};

// Above this relative error a fit is marked untrusted: its line's rms error over the sizes it
// was fitted on, or a leave-one-out prediction's median error. Its numbers are still printed,
// with the mark, and a crossover drawn from it says so.
constexpr double kTrustedRelErr = 0.25;

struct LineFit {
  double a = 0, b = 0;  // T(S) = a + b·S, µs and µs/byte
  double rmsRelErr = 0, maxRelErr = 0;  // over the samples fitted
  std::size_t samples = 0;
};

// Robust fit of T = a + b·x over the samples (see above); needs >= 2 distinct sizes.
LineFit fitLine(const std::vector<Sample>& samples);
// Robust fit of T = α·u_i + β·v_i (two regressors, no intercept): the joint fit across N.
struct TwoFit {
  double alpha = 0, beta = 0, rmsRelErr = 0;
};
TwoFit fitTwo(const std::vector<double>& u, const std::vector<double>& v, const std::vector<double>& t);

// One fitted group of records.
struct Fit {
  std::string op, algo, transport, device;
  std::string carrier;  // what carried the data (records' carrier; else this build's registry)
  int n = 0;
  bool inPlace = true;
  LineFit line;
  std::optional<Formula> formula;
  double alphaUs = 0, betaUsPerByte = 0;  // per step and per byte (NaN without a formula)
  // Why the fit means nothing ("" when it does): a clamped or non-finite A or B. Its alpha and
  // beta are then not reported and nothing is predicted or crossed from it.
  std::string noFit;
  std::vector<Sample> samples;  // by size, ascending
  // Records of the group whose machine was busy (machine.busy: other processes took the ranks'
  // cores): their times are the load's (on two cores a 4 ms scheduler tick fits as a latency of
  // ms), so the fit is not trusted, whatever its error.
  int busyRecords = 0;
  // tickPlateau's text for its samples where fitAll was told to fit them anyway (allowBusy); a
  // fit with it is not trusted. Without allowBusy such a group is no fit (noFit says why).
  std::string ticks;
  bool trusted() const {
    return noFit.empty() && busyRecords == 0 && ticks.empty() && line.rmsRelErr <= kTrustedRelErr;
  }
};

// A CPU collective between the ranks of one machine answers 8 bytes in microseconds. Times that
// sit flat at a millisecond or more over the smallest sizes are the scheduler's (a rank that lost
// its core waits for the next tick: 1, 4 or 10 ms), a fit of them a "latency" of milliseconds.
// Above this, flat over kTickPlateauSpan or more of size, the smallest sizes are called a tick.
constexpr double kTickPlateauUs = 1000;
constexpr double kTickPlateauSpan = 64;
// "times flat at 4.1 ms over sizes 8..2M: ..." where a CPU group's samples (by size, ascending)
// open with kTickPlateauSpan or more of size whose times are each within 25 % of the smallest
// size's, at kTickPlateauUs or more, over 3 or more sizes; "" otherwise, and for any other device
// (a GPU's or an imported log's times are another machine's).
std::string tickPlateau(const std::string& device, const std::vector<Sample>& samples);

// Why a fit of time = fixed + perByte·S says nothing about the link ("" when it does): each
// must be finite and > 0 (the fit clamps them at 0 when the data would make them negative).
std::string whyNoFit(double fixed, double perByte);

// Groups the ok, measured records and fits each group with >= 2 sizes. A group on a tick
// (tickPlateau) is no fit, unless `allowBusy` (model --allow_busy): then it is fitted, untrusted.
std::vector<Fit> fitAll(const std::vector<CollectiveRecord>& records, bool allowBusy = false);

// α and β fitted jointly over fits of one (op, algo, transport, device, placement) at their N
// (each through its formula, Fit::formula), robustly as fitAll fits a line. noFit says why the
// pair means nothing (as Fit::noFit), as does a group without a formula or with fewer than two
// sizes in all.
struct AcrossN {
  double alphaUs = 0, betaUsPerByte = 0;
  std::vector<int> ns;  // ascending
  std::string noFit;
};
AcrossN fitAcrossN(const std::vector<const Fit*>& group);

// Leave-one-out across N: per (op, algo, transport, device, placement) measured at >= 2 N, α and
// β fitted jointly on every N but the largest, then each size at the largest N predicted.
struct Validation {
  std::string op, algo, transport, device;
  std::string carrier;  // as Fit::carrier
  bool inPlace = true;
  int predictedN = 0;
  std::vector<int> fittedNs;
  double alphaUs = 0, betaUsPerByte = 0;
  std::string noFit;  // as Fit::noFit, for the joint fit; rows are then empty
  struct Row {
    double bytes, measuredUs, predictedUs;
  };
  std::vector<Row> rows;
  double medianAbsRelErr = 0;
  bool trusted() const { return noFit.empty() && medianAbsRelErr <= kTrustedRelErr; }
};
std::vector<Validation> leaveOneOut(const std::vector<Fit>& fits);

// Where two fitted algorithms of one op at one (transport, device, N) cross: the size at which
// the first stops being faster (their lines meet); nullopt when one wins at every size. What the
// lines claim is checked against what was measured: the sizes both were measured at, and at
// which of them the measured medians put the other algorithm first.
struct Crossover {
  std::string op, transport, device, first, second;
  std::string firstCarrier, secondCarrier;  // Fit::carrier of each
  int n = 0;
  std::optional<double> bytes;
  std::string note;  // "first faster below", "second faster at every size", ...
  double fromBytes = 0, toBytes = 0;  // the smallest and largest size both were measured at
  std::vector<double> measuredSizes;  // every size both were measured at, ascending
  std::vector<double> contradicted;   // those where the medians disagree with the lines
  std::vector<std::string> measuredFaster;  // per contradicted size: the one its medians put first
  bool trusted = true;                // both fits are (Fit::trusted)
  // The crossing lies outside [fromBytes, toBytes]: nothing measured shows it.
  bool outsideMeasured() const { return bytes && (*bytes < fromBytes || *bytes > toBytes); }
};
std::vector<Crossover> crossovers(const std::vector<Fit>& fits);

// A link's published figures: per-step latency (µs) and per-direction bandwidth (GB/s).
struct LinkPreset {
  std::string name, description;
  double alphaUs = 0, gbps = 0;
  std::string source;
};
const std::vector<LinkPreset>& linkPresets();
// Throws UsageError naming --link and the presets.
const LinkPreset& findLink(const std::string& name);
// "nvlink4, nvlink5, ...": the presets' names, for --help.
std::string linkNames();

// Time (µs) and busbw (GB/s, nccl-tests' factor for the op) of (op, algo) at n ranks and S bytes
// on a link: T = a(N)·α_link + b(N)·S/bw_link. Nothing of this machine enters it.
struct Projection {
  double us = 0, busbwGbps = 0;
};
Projection project(const Formula& f, double busFactor, const LinkPreset& link, int n, double bytes);

// nccl-tests' bus bandwidth factor of an op (allreduce 2(N-1)/N, ...); 1 for an unknown op.
double busFactorOf(const std::string& op, int n);

}  // namespace tpb::model
