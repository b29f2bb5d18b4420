#include "cost_model/model_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "common/error.h"
#include "common/format_bytes.h"
#include "common/text_escape.h"
#include "cost_model/alpha_beta.h"
#include "record/results.h"

namespace tpb::model {

using nlohmann::json;

namespace {

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

// 1/beta in GB/s, or "-" where beta is no rate (a fit that is not one, never "inf").
std::string gbpsOfBeta(double usPerByte) {
  return usPerByte > 0 && std::isfinite(usPerByte) ? fmt("%.3g", 1e-3 / usPerByte) + "GB/s" : "-";
}

std::string alphaText(double us) { return us > 0 && std::isfinite(us) ? fmt("%.3g", us) : "-"; }

// A number of the fits table, "-" where it is not finite (absurd input can overflow a sum).
std::string cell(const char* f, double v) { return std::isfinite(v) ? fmt(f, v) : "-"; }

// Names come from the results files: printed, they must not drive the terminal. A group is
// named by what carried its data (a library's own, or the run's transport).
std::string key(const std::string& op, const std::string& algo, const std::string& carrier, const std::string& device,
                bool inPlace) {
  return printable(op + " " + algo + " over " + carrier + " (" + device + (inPlace ? "" : ", out of place") + ")");
}

std::string percent(double fraction) { return fmt("%.0f %%", fraction * 100); }

// "1K..64M": the sizes a fit was measured at.
std::string rangeText(const Fit& f) {
  if (f.samples.empty()) return "-";
  return formatBytes(static_cast<std::size_t>(f.samples.front().bytes)) + ".." +
         formatBytes(static_cast<std::size_t>(f.samples.back().bytes));
}

std::string trustText(const Fit& f) {
  if (!f.noFit.empty()) return "-";
  if (f.busyRecords > 0) return "BUSY";
  if (!f.ticks.empty()) return "TICKS";
  return f.trusted() ? "ok" : "UNTRUSTED";
}

// The formula column: the formula and its assumption, or why there is no fit.
std::string formulaText(const Fit& f) {
  if (!f.noFit.empty()) return "no fit: " + f.noFit;
  if (!f.formula) return "(no formula)";
  return f.formula->text + (f.formula->assumption.empty() ? "" : " [" + f.formula->assumption + "]");
}

json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// The fits table (MEASURED): one line per group, α and β or why there is no fit.
json fitsSection(const std::vector<Fit>& fits, std::ostream& os) {
  os << "MEASURED — alpha-beta fit T(S) = A + B*S per group (robust least squares on relative error),\n"
     << "then alpha = A / steps(N), beta = B / bytes(N) from the algorithm's formula; a fit whose rms\n"
     << "error is above " << percent(kTrustedRelErr) << " is UNTRUSTED: its numbers and crossovers are not to be relied on\n"
     << "(BUSY: some of its records say other processes took the ranks' cores, so it times the load, untrusted too;\n"
     << "a CPU group whose smallest sizes sit flat at 1 ms or more is no fit: a scheduler tick, not a latency;\n"
     << "--allow_busy fits it, marked TICKS and untrusted)\n\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-52s %3s %5s %11s %10s %12s %10s %10s %8s %8s %9s  %s\n", "group", "N", "sizes",
                "range", "A_us", "B_ns/KiB", "alpha_us", "1/beta", "rms_err", "max_err", "trust", "formula");
  os << line;
  json jf = json::array();
  for (const auto& f : fits) {
    std::snprintf(line, sizeof line, "%-52s %3d %5zu %11s %10s %12s %10s %10s %8s %8s %9s  %s\n",
                  key(f.op, f.algo, f.carrier, f.device, f.inPlace).c_str(), f.n, f.line.samples,
                  rangeText(f).c_str(), cell("%.2f", f.line.a).c_str(), cell("%.3f", f.line.b * 1024 * 1e3).c_str(),
                  alphaText(f.alphaUs).c_str(), gbpsOfBeta(f.betaUsPerByte).c_str(),
                  cell("%.1f%%", f.line.rmsRelErr * 100).c_str(), cell("%.1f%%", f.line.maxRelErr * 100).c_str(),
                  trustText(f).c_str(), formulaText(f).c_str());
    os << line;
    jf.push_back({{"op", f.op}, {"algo", f.algo}, {"transport", f.transport}, {"carrier", f.carrier},
                  {"device", f.device}, {"n_gpus", f.n}, {"trusted", f.trusted()}, {"busy_records", f.busyRecords},
                  {"ticks", f.ticks.empty() ? json(nullptr) : json(f.ticks)},
                  {"in_place", f.inPlace}, {"sizes", f.line.samples}, {"a_us", f.line.a}, {"b_us_per_byte", f.line.b},
                  {"alpha_us", num(f.alphaUs)}, {"beta_us_per_byte", num(f.betaUsPerByte)},
                  {"rms_rel_err", f.line.rmsRelErr}, {"max_rel_err", f.line.maxRelErr},
                  {"formula", f.formula ? json(f.formula->text) : json(nullptr)},
                  {"no_fit", f.noFit.empty() ? json(nullptr) : json(f.noFit)}});
  }
  return jf;
}

// Leave-one-out (MEASURED vs PREDICTED): per group, the largest N predicted from the others.
json validationSection(const std::vector<Fit>& fits, std::ostream& os) {
  char line[512];
  os << "\nMEASURED vs PREDICTED — leave-one-out: alpha, beta fitted on the smaller N, each size at the\n"
     << "largest N predicted from the formula\n";
  json jv = json::array();
  const auto validations = leaveOneOut(fits);
  if (validations.empty()) os << "  (needs one group measured at 2 or more N)\n";
  for (const auto& v : validations) {
    std::string fitted;
    for (int n : v.fittedNs) fitted += (fitted.empty() ? "" : ",") + std::to_string(n);
    os << "\n  " << key(v.op, v.algo, v.carrier, v.device, v.inPlace) << ": fitted on N=" << fitted;
    if (!v.noFit.empty()) {
      // Predictions from a fit that is none would be made up: say why there are none.
      os << ": no fit: " << v.noFit << "; N=" << v.predictedN << " not predicted\n";
      jv.push_back({{"op", v.op}, {"algo", v.algo}, {"transport", v.transport}, {"carrier", v.carrier},
                    {"device", v.device}, {"in_place", v.inPlace}, {"fitted_n", v.fittedNs},
                    {"predicted_n", v.predictedN}, {"trusted", false}, {"no_fit", v.noFit}});
      continue;
    }
    os << " (alpha " << fmt("%.3g", v.alphaUs) << " us, 1/beta " << gbpsOfBeta(v.betaUsPerByte) << "), predicting N="
       << v.predictedN << "\n";
    std::snprintf(line, sizeof line, "  %10s %14s %14s %9s\n", "bytes", "measured_us", "predicted_us", "error");
    os << line;
    json rows = json::array();
    for (const auto& r : v.rows) {
      std::snprintf(line, sizeof line, "  %10s %14.1f %14.1f %+8.1f%%\n", formatBytes(static_cast<std::size_t>(r.bytes)).c_str(),
                    r.measuredUs, r.predictedUs, (r.predictedUs / r.measuredUs - 1) * 100);
      os << line;
      rows.push_back({{"bytes", r.bytes}, {"measured_us", r.measuredUs}, {"predicted_us", r.predictedUs}});
    }
    os << "  median |error| " << fmt("%.1f", v.medianAbsRelErr * 100) << " %"
       << (v.trusted() ? "" : "; UNTRUSTED: above " + percent(kTrustedRelErr) + ", the formula does not carry to other N here")
       << "\n";
    jv.push_back({{"op", v.op}, {"algo", v.algo}, {"transport", v.transport}, {"carrier", v.carrier}, {"device", v.device},
                  {"in_place", v.inPlace}, {"fitted_n", v.fittedNs}, {"predicted_n", v.predictedN},
                  {"trusted", v.trusted()}, {"alpha_us", v.alphaUs}, {"beta_us_per_byte", v.betaUsPerByte}, {"rows", rows},
                  {"median_abs_rel_err", num(v.medianAbsRelErr)}});
  }
  return jv;
}

std::string sizeText(double bytes) { return formatBytes(static_cast<std::size_t>(bytes)); }

// The sizes of `all` (ascending) that are in `some`, consecutive ones as a range: "8K-128K, 1M".
std::string sizeRuns(const std::vector<double>& all, const std::vector<double>& some) {
  auto in = [&](std::size_t i) { return std::find(some.begin(), some.end(), all[i]) != some.end(); };
  std::string out;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (!in(i)) continue;
    std::size_t j = i;
    while (j + 1 < all.size() && in(j + 1)) ++j;
    out += (out.empty() ? "" : ", ") + sizeText(all[i]) + (j > i ? "-" + sizeText(all[j]) : "");
    i = j;
  }
  return out;
}

// Why a crossover's claim is not to be taken as it stands, one reason a line; none when it is.
std::vector<std::string> caveats(const Crossover& c) {
  std::vector<std::string> out;
  for (const std::string& who : {c.first, c.second}) {
    std::vector<double> sizes;
    for (std::size_t i = 0; i < c.contradicted.size(); ++i)
      if (c.measuredFaster[i] == who) sizes.push_back(c.contradicted[i]);
    if (!sizes.empty())
      out.push_back("CONTRADICTED by the measurements: " + who + "'s median was lower at " + sizeRuns(c.measuredSizes, sizes));
  }
  if (c.outsideMeasured())
    out.push_back("the crossing lies outside the sizes both were measured at (" + sizeText(c.fromBytes) + ".." +
                  sizeText(c.toBytes) + "): an extrapolation");
  if (!c.trusted) out.push_back("from an UNTRUSTED fit (rms error above " + percent(kTrustedRelErr) + ")");
  return out;
}

json crossoverJson(const Crossover& c, const std::vector<std::string>& why) {
  return {{"op", c.op}, {"n_gpus", c.n}, {"transport", c.transport}, {"device", c.device}, {"first", c.first},
          {"second", c.second}, {"first_carrier", c.firstCarrier}, {"second_carrier", c.secondCarrier},
          {"bytes", c.bytes ? json(*c.bytes) : json(nullptr)}, {"note", c.note},
          {"measured_from", c.fromBytes}, {"measured_to", c.toBytes}, {"outside_measured", c.outsideMeasured()},
          {"contradicted_bytes", c.contradicted}, {"trusted", c.trusted}, {"caveats", why}};
}

// Crossovers of the fitted lines (MEASURED), each checked against the measured medians; groups
// that are no fit are listed as left out.
json crossoverSection(const std::vector<Fit>& fits, std::ostream& os) {
  os << "\nMEASURED — crossovers of the fitted lines (same op, run transport, device, N), checked against the\n"
     << "measured medians at the sizes both algorithms ran\n";
  json jc = json::array();
  for (const auto& f : fits)
    if (!f.noFit.empty()) os << "  " << key(f.op, f.algo, f.carrier, f.device, f.inPlace) << " N=" << f.n << ": omitted (no fit)\n";
  for (const auto& c : crossovers(fits)) {
    const std::vector<std::string> why = caveats(c);
    os << "  " << printable(c.op) << " N=" << c.n << ": " << printable(c.first + " over " + c.firstCarrier) << " vs "
       << printable(c.second + " over " + c.secondCarrier) << ": "
       << (c.bytes ? "cross at " + formatBytesApprox(*c.bytes) + "; " : std::string()) << printable(c.note)
       << (why.empty() ? "" : " (the fitted lines)") << "\n";
    for (const auto& w : why) os << "      caveat: " << printable(w) << "\n";
    jc.push_back(crossoverJson(c, why));
  }
  return jc;
}

}  // namespace

json runModel(const ModelOptions& opt, std::ostream& os) {
  if (opt.files.empty()) TPB_THROW(UsageError, "model: no results file given");
  std::vector<const LinkPreset*> links;
  if (opt.link.empty())
    for (const auto& l : linkPresets()) links.push_back(&l);
  else
    links.push_back(&findLink(opt.link));
  // Claimed before the inputs are read, and held until the model is written.
  std::optional<OwnedOutput> owned;
  if (!opt.out.empty()) owned.emplace("--out", opt.out, kModelOutput, OutputFlags{false, opt.overwrite, false});
  std::vector<CollectiveRecord> records;
  for (const auto& path : opt.files) {
    const ResultsFile f = ResultsFile::load(path);
    records.insert(records.end(), f.collectives().begin(), f.collectives().end());
  }
  const std::vector<Fit> fits = fitAll(records, opt.allowBusy);
  if (fits.empty()) {
    std::string names;  // the refusal names the files the user gave, as every refusal of a file does
    for (const auto& path : opt.files) names += (names.empty() ? "" : ", ") + path;
    TPB_THROW(UsageError, "model: nothing to fit in " << names
                                                      << ": no ok collective point with N >= 2 measured at 2 or more sizes");
  }
  json doc = {{"schema", "tpbench.model/1"}, {"files", opt.files}, {"trusted_rel_err", kTrustedRelErr}};

  doc["fits"] = fitsSection(fits, os);
  doc["validation"] = validationSection(fits, os);
  doc["crossovers"] = crossoverSection(fits, os);
  char line[512];

  // Projections: nothing of this machine enters them, only each algorithm's formula and the link.
  os << "\nPROJECTED — from published link figures and each algorithm's formula, not from this machine:\n"
     << "T = steps(N)*alpha_link + bytes(N)*S/bw_link; busbw with nccl-tests' factor\n";
  json jp = json::array();
  std::vector<std::pair<std::string, std::string>> algos;  // (op, algo) fitted, with a formula
  for (const auto& f : fits)
    if (f.formula && std::find(algos.begin(), algos.end(), std::make_pair(f.op, f.algo)) == algos.end())
      algos.push_back({f.op, f.algo});
  for (const LinkPreset* l : links) {
    os << "\n  " << l->name << ": " << l->description << " — alpha " << l->alphaUs << " us/step, " << l->gbps
       << " GB/s per direction (" << l->source << ")\n";
    std::snprintf(line, sizeof line, "  %-30s %5s %12s %12s %12s %12s\n", "op algo", "N", "busbw@1M", "busbw@64M",
                  "busbw@1G", "busbw@4G");
    os << line;
    for (const auto& [op, algo] : algos) {
      const Formula f = *formulaOf(op, algo);
      for (int n : {8, 16, 64, 512}) {
        double bw[4];
        const double sizes[4] = {1 << 20, 64 << 20, 1 << 30, 4.0 * (1 << 30)};
        json pts = json::array();
        for (int i = 0; i < 4; ++i) {
          bw[i] = project(f, busFactorOf(op, n), *l, n, sizes[i]).busbwGbps;
          pts.push_back({{"bytes", sizes[i]}, {"busbw_gbps", bw[i]}});
        }
        std::snprintf(line, sizeof line, "  %-30s %5d %12.1f %12.1f %12.1f %12.1f\n", (op + " " + algo).c_str(), n,
                      bw[0], bw[1], bw[2], bw[3]);
        os << line;
        jp.push_back({{"link", l->name}, {"op", op}, {"algo", algo}, {"n_gpus", n}, {"points", pts}});
      }
    }
    if (l->name == "nvlink4" && formulaOf("allreduce", "ring")) {
      const double ring = project(*formulaOf("allreduce", "ring"), busFactorOf("allreduce", 8), *l, 8, 4.0 * (1 << 30)).busbwGbps;
      os << "  published: nccl-tests all_reduce_perf on 8x H100 SXM (NCCL_ALGO=RING), 2-4 GiB: about 365-370 GB/s busbw;\n"
         << "  this projection gives " << fmt("%.0f", ring) << " GB/s, " << fmt("%.0f", (ring / 367.5 - 1) * 100)
         << " % above: the model charges the link's full rate and no protocol, kernel or memory overhead.\n";
    }
  }
  doc["projection"] = jp;
  if (!opt.out.empty()) {
    writeFileAtomic(opt.out, doc.dump(2) + "\n");
    os << "\nmodel written to " << printable(opt.out) << "\n";
  }
  return doc;
}

}  // namespace tpb::model
