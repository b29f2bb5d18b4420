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

// Names come from the results files: printed, they must not drive the terminal.
std::string key(const std::string& op, const std::string& algo, const std::string& transport, const std::string& device,
                bool inPlace) {
  return printable(op + " " + algo + " over " + transport + " (" + device + (inPlace ? "" : ", out of place") + ")");
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
     << "then alpha = A / steps(N), beta = B / bytes(N) from the algorithm's formula\n\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-52s %3s %5s %10s %12s %10s %10s %8s %8s  %s\n", "group", "N", "sizes", "A_us",
                "B_ns/KiB", "alpha_us", "1/beta", "rms_err", "max_err", "formula");
  os << line;
  json jf = json::array();
  for (const auto& f : fits) {
    std::snprintf(line, sizeof line, "%-52s %3d %5zu %10s %12s %10s %10s %8s %8s  %s\n",
                  key(f.op, f.algo, f.transport, f.device, f.inPlace).c_str(), f.n, f.line.samples,
                  cell("%.2f", f.line.a).c_str(), cell("%.3f", f.line.b * 1024 * 1e3).c_str(),
                  alphaText(f.alphaUs).c_str(), gbpsOfBeta(f.betaUsPerByte).c_str(),
                  cell("%.1f%%", f.line.rmsRelErr * 100).c_str(), cell("%.1f%%", f.line.maxRelErr * 100).c_str(),
                  formulaText(f).c_str());
    os << line;
    jf.push_back({{"op", f.op}, {"algo", f.algo}, {"transport", f.transport}, {"device", f.device}, {"n_gpus", f.n},
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
    os << "\n  " << key(v.op, v.algo, v.transport, v.device, v.inPlace) << ": fitted on N=" << fitted;
    if (!v.noFit.empty()) {
      // Predictions from a fit that is none would be made up: say why there are none.
      os << ": no fit: " << v.noFit << "; N=" << v.predictedN << " not predicted\n";
      jv.push_back({{"op", v.op}, {"algo", v.algo}, {"transport", v.transport}, {"device", v.device},
                    {"in_place", v.inPlace}, {"fitted_n", v.fittedNs}, {"predicted_n", v.predictedN},
                    {"no_fit", v.noFit}});
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
    os << "  median |error| " << fmt("%.1f", v.medianAbsRelErr * 100) << " %\n";
    jv.push_back({{"op", v.op}, {"algo", v.algo}, {"transport", v.transport}, {"device", v.device},
                  {"in_place", v.inPlace}, {"fitted_n", v.fittedNs}, {"predicted_n", v.predictedN},
                  {"alpha_us", v.alphaUs}, {"beta_us_per_byte", v.betaUsPerByte}, {"rows", rows},
                  {"median_abs_rel_err", num(v.medianAbsRelErr)}});
  }
  return jv;
}

// Crossovers of the fitted lines (MEASURED); groups that are no fit are listed as left out.
json crossoverSection(const std::vector<Fit>& fits, std::ostream& os) {
  os << "\nMEASURED — crossovers of the fitted lines (same op, transport, device, N)\n";
  json jc = json::array();
  for (const auto& f : fits)
    if (!f.noFit.empty()) os << "  " << key(f.op, f.algo, f.transport, f.device, f.inPlace) << " N=" << f.n << ": omitted (no fit)\n";
  for (const auto& c : crossovers(fits)) {
    os << "  " << printable(c.op) << " N=" << c.n << " over " << printable(c.transport) << ": " << printable(c.first)
       << " vs " << printable(c.second) << ": "
       << (c.bytes ? "cross at " + formatBytes(static_cast<std::size_t>(*c.bytes)) + "; " : std::string())
       << printable(c.note) << "\n";
    jc.push_back({{"op", c.op}, {"n_gpus", c.n}, {"transport", c.transport}, {"device", c.device}, {"first", c.first},
                  {"second", c.second}, {"bytes", c.bytes ? json(*c.bytes) : json(nullptr)}, {"note", c.note}});
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
  const std::vector<Fit> fits = fitAll(records);
  if (fits.empty()) {
    std::string names;  // the refusal names the files the user gave, as every refusal of a file does
    for (const auto& path : opt.files) names += (names.empty() ? "" : ", ") + path;
    TPB_THROW(UsageError, "model: nothing to fit in " << names
                                                      << ": no ok collective point with N >= 2 measured at 2 or more sizes");
  }
  json doc = {{"schema", "tpbench.model/1"}, {"files", opt.files}};

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
