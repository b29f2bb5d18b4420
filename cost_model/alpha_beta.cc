#include "cost_model/alpha_beta.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

#include "common/bus_factor.h"
#include "common/error.h"
#include "common/format_bytes.h"
#include "core/registry.h"

namespace tpb::model {

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// Weighted least squares of t = x·u + y·v (no intercept) with weights w; false when singular.
bool solve2(const std::vector<double>& u, const std::vector<double>& v, const std::vector<double>& t,
            const std::vector<double>& w, double& x, double& y) {
  double suu = 0, suv = 0, svv = 0, sut = 0, svt = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    suu += w[i] * u[i] * u[i];
    suv += w[i] * u[i] * v[i];
    svv += w[i] * v[i] * v[i];
    sut += w[i] * u[i] * t[i];
    svt += w[i] * v[i] * t[i];
  }
  const double det = suu * svv - suv * suv;
  if (!(std::abs(det) > 1e-300)) return false;
  x = (sut * svv - svt * suv) / det;
  y = (svt * suu - sut * suv) / det;
  return true;
}

// One regressor: t = y·v.
double solve1(const std::vector<double>& v, const std::vector<double>& t, const std::vector<double>& w) {
  double svv = 0, svt = 0;
  for (std::size_t i = 0; i < t.size(); ++i) svv += w[i] * v[i] * v[i], svt += w[i] * v[i] * t[i];
  return svv > 0 ? svt / svv : 0;
}

// IRLS on relative residuals with Huber weights (k = 1.345 robust standard deviations, the usual
// 95 %-efficiency constant; the scale is 1.4826 x the median absolute residual), the
// coefficients clamped at >= 0 by refitting the other alone.
TwoFit robustTwo(const std::vector<double>& u, const std::vector<double>& v, const std::vector<double>& t) {
  const std::size_t m = t.size();
  std::vector<double> robust(m, 1.0), w(m);
  double x = 0, y = 0;
  for (int iter = 0; iter < 20; ++iter) {
    for (std::size_t i = 0; i < m; ++i) w[i] = robust[i] / (t[i] * t[i]);  // relative residuals
    if (!solve2(u, v, t, w, x, y)) {
      x = solve1(u, t, w);
      y = 0;
    }
    if (x < 0) x = 0, y = std::max(0.0, solve1(v, t, w));
    if (y < 0) y = 0, x = std::max(0.0, solve1(u, t, w));
    std::vector<double> r(m), absr(m);
    for (std::size_t i = 0; i < m; ++i) r[i] = (x * u[i] + y * v[i] - t[i]) / t[i], absr[i] = std::abs(r[i]);
    const double scale = 1.4826 * median(absr);
    if (!(scale > 1e-12)) break;
    const double k = 1.345 * scale;
    for (std::size_t i = 0; i < m; ++i) robust[i] = absr[i] <= k ? 1.0 : k / absr[i];
  }
  TwoFit f;
  f.alpha = x;
  f.beta = y;
  double ss = 0;
  for (std::size_t i = 0; i < m; ++i) {
    const double rel = (x * u[i] + y * v[i] - t[i]) / t[i];
    ss += rel * rel;
  }
  f.rmsRelErr = m ? std::sqrt(ss / m) : 0;
  return f;
}

// What carried a record's data: as recorded, else (files older than the field) what this build's
// registry says its algorithm sends over.
std::string carrierOfRecord(const CollectiveRecord& r) {
  if (r.entry.carrier) return *r.entry.carrier;
  const Device d = r.device == deviceName(Device::Cuda) ? Device::Cuda : Device::Cpu;
  for (const auto& c : collectiveAlgos())
    if (c.op == r.op && c.name == r.algo) return carrierOf(c, d, r.transport);
  return r.transport;
}

}  // namespace

std::optional<Formula> formulaOf(const std::string& op, const std::string& algo) {
  for (const auto& c : collectiveAlgos())
    if (c.op == op && c.name == algo) return c.cost;
  return std::nullopt;
}

double busFactorOf(const std::string& op, int n) { return tpb::busFactorOf(op)(n); }

TwoFit fitTwo(const std::vector<double>& u, const std::vector<double>& v, const std::vector<double>& t) {
  TPB_CHECK(u.size() == t.size() && v.size() == t.size(), "fitTwo: sizes differ");
  for (double x : t) TPB_CHECK(x > 0, "fitTwo: times must be positive");
  return robustTwo(u, v, t);
}

LineFit fitLine(const std::vector<Sample>& samples) {
  std::vector<double> one, s, t;
  for (const auto& x : samples) {
    if (!(x.us > 0)) continue;
    one.push_back(1);
    s.push_back(x.bytes);
    t.push_back(x.us);
  }
  LineFit f;
  f.samples = t.size();
  if (t.size() < 2) return f;
  const TwoFit two = robustTwo(one, s, t);
  f.a = two.alpha;
  f.b = two.beta;
  f.rmsRelErr = two.rmsRelErr;
  for (std::size_t i = 0; i < t.size(); ++i) f.maxRelErr = std::max(f.maxRelErr, std::abs((f.a + f.b * s[i] - t[i]) / t[i]));
  return f;
}

std::string whyNoFit(double fixed, double perByte) {
  if (!std::isfinite(fixed) || !std::isfinite(perByte)) return "the fit is not finite";
  if (!(perByte > 0)) return "time does not grow with size (per-byte cost 0), so no bandwidth";
  if (!(fixed > 0)) return "no fixed cost per call (intercept 0), so no latency";
  return "";
}

std::string tickPlateau(const std::string& device, const std::vector<Sample>& samples) {
  if (device != "cpu" || samples.empty()) return "";
  const double t0 = samples.front().us;
  if (!(t0 >= kTickPlateauUs)) return "";
  std::size_t n = 0;
  while (n < samples.size() && samples[n].us >= t0 / 1.25 && samples[n].us <= t0 * 1.25) ++n;
  if (n < 3 || !(samples[n - 1].bytes >= kTickPlateauSpan * samples.front().bytes)) return "";
  std::vector<double> level;
  for (std::size_t i = 0; i < n; ++i) level.push_back(samples[i].us);
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.3g ms", median(level) / 1e3);
  return std::string("times flat at ") + ms + " over sizes " +
         formatBytes(static_cast<std::size_t>(samples.front().bytes)) + ".." +
         formatBytes(static_cast<std::size_t>(samples[n - 1].bytes)) +
         ": a scheduler tick's wait (ranks that lost their cores), not the link's latency";
}

std::vector<Fit> fitAll(const std::vector<CollectiveRecord>& records, bool allowBusy) {
  std::map<std::tuple<std::string, std::string, std::string, std::string, int, bool>, std::map<double, std::vector<double>>>
      groups;
  std::map<std::tuple<std::string, std::string, std::string, std::string, int, bool>, std::string> carriers;
  std::map<std::tuple<std::string, std::string, std::string, std::string, int, bool>, int> busy;
  for (const auto& r : records) {
    if (!r.ok() || !r.measured || !(r.timeMedianUs > 0) || r.bytes == 0 || r.nGpus < 2) continue;
    const auto key = std::make_tuple(r.op, r.algo, r.transport, r.device, r.nGpus, r.isInPlace());
    groups[key][double(r.bytes)].push_back(r.timeMedianUs);
    carriers.emplace(key, carrierOfRecord(r));
    if (r.machine && r.machine->busy) ++busy[key];
  }
  std::vector<Fit> fits;
  for (const auto& [key, bySize] : groups) {
    if (bySize.size() < 2) continue;
    Fit f;
    std::tie(f.op, f.algo, f.transport, f.device, f.n, f.inPlace) = key;
    f.carrier = carriers[key];
    for (const auto& [bytes, us] : bySize) f.samples.push_back({bytes, median(us)});  // repeats: their median
    f.line = fitLine(f.samples);
    f.formula = formulaOf(f.op, f.algo);
    f.alphaUs = f.betaUsPerByte = NAN;
    f.noFit = f.line.samples < 2 ? "fewer than 2 sizes with a positive time" : whyNoFit(f.line.a, f.line.b);
    if (busy.count(key)) f.busyRecords = busy[key];
    if (f.noFit.empty()) {
      const std::string ticks = tickPlateau(f.device, f.samples);
      if (!ticks.empty() && allowBusy) f.ticks = ticks;
      if (!ticks.empty() && !allowBusy) f.noFit = ticks + " (--allow_busy fits it anyway)";
    }
    if (f.formula && f.noFit.empty()) {
      const Cost c = f.formula->at(f.n);
      if (c.steps > 0) f.alphaUs = f.line.a / c.steps;
      if (c.bytesFactor > 0) f.betaUsPerByte = f.line.b / c.bytesFactor;
    }
    fits.push_back(std::move(f));
  }
  return fits;
}

AcrossN fitAcrossN(const std::vector<const Fit*>& group) {
  AcrossN out;
  std::vector<double> u, w, t;
  for (const Fit* f : group) {
    if (!f->formula) {
      out.noFit = f->algo + " has no cost formula to fit across N";
      return out;
    }
    out.ns.push_back(f->n);
    const Cost c = f->formula->at(f->n);
    for (const auto& s : f->samples) {
      u.push_back(c.steps);
      w.push_back(c.bytesFactor * s.bytes);
      t.push_back(s.us);
    }
  }
  std::sort(out.ns.begin(), out.ns.end());
  if (t.size() < 2) {
    out.noFit = "fewer than two measured sizes";
    return out;
  }
  const TwoFit two = robustTwo(u, w, t);
  out.alphaUs = two.alpha;
  out.betaUsPerByte = two.beta;
  out.noFit = whyNoFit(two.alpha, two.beta);
  return out;
}

std::vector<Validation> leaveOneOut(const std::vector<Fit>& fits) {
  std::map<std::tuple<std::string, std::string, std::string, std::string, bool>, std::vector<const Fit*>> groups;
  for (const auto& f : fits)
    if (f.formula && f.noFit.empty()) groups[{f.op, f.algo, f.transport, f.device, f.inPlace}].push_back(&f);
  std::vector<Validation> out;
  for (const auto& [key, group] : groups) {
    if (group.size() < 2) continue;
    const Fit* largest = group.front();
    for (const Fit* f : group)
      if (f->n > largest->n) largest = f;
    Validation v;
    std::tie(v.op, v.algo, v.transport, v.device, v.inPlace) = key;
    v.predictedN = largest->n;
    v.carrier = largest->carrier;
    std::vector<const Fit*> others;
    for (const Fit* f : group)
      if (f != largest) others.push_back(f);
    const AcrossN fitted = fitAcrossN(others);
    v.fittedNs = fitted.ns;
    v.alphaUs = fitted.alphaUs;
    v.betaUsPerByte = fitted.betaUsPerByte;
    v.noFit = fitted.noFit;
    if (!v.noFit.empty()) {
      out.push_back(std::move(v));
      continue;
    }
    const Cost c = largest->formula->at(largest->n);
    std::vector<double> errs;
    for (const auto& s : largest->samples) {
      const double pred = c.steps * v.alphaUs + c.bytesFactor * s.bytes * v.betaUsPerByte;
      v.rows.push_back({s.bytes, s.us, pred});
      errs.push_back(std::abs(pred - s.us) / s.us);
    }
    v.medianAbsRelErr = median(errs);
    out.push_back(std::move(v));
  }
  return out;
}

namespace {

// Whether a's line is below b's at s bytes.
bool lineFaster(const Fit& a, const Fit& b, double s) { return a.line.a + a.line.b * s < b.line.a + b.line.b * s; }

// The sizes both fits were measured at, and those where the measured medians rank the two
// otherwise than their lines do (equal medians contradict nothing).
void checkAgainstMeasured(const Fit& a, const Fit& b, Crossover& c) {
  for (const Sample& x : a.samples)
    for (const Sample& y : b.samples) {
      if (x.bytes != y.bytes) continue;
      c.measuredSizes.push_back(x.bytes);
      if (x.us == y.us || (x.us < y.us) == lineFaster(a, b, x.bytes)) continue;
      c.contradicted.push_back(x.bytes);
      c.measuredFaster.push_back(x.us < y.us ? a.algo : b.algo);
    }
  if (c.measuredSizes.empty()) return;
  c.fromBytes = c.measuredSizes.front();
  c.toBytes = c.measuredSizes.back();
}

}  // namespace

std::vector<Crossover> crossovers(const std::vector<Fit>& fits) {
  std::vector<Crossover> out;
  for (std::size_t i = 0; i < fits.size(); ++i)
    for (std::size_t j = i + 1; j < fits.size(); ++j) {
      const Fit &a = fits[i], &b = fits[j];
      if (a.op != b.op || a.transport != b.transport || a.device != b.device || a.n != b.n || a.inPlace != b.inPlace ||
          a.algo == b.algo || !a.noFit.empty() || !b.noFit.empty())
        continue;  // lines that are no fit cross nothing
      Crossover c;
      c.op = a.op, c.transport = a.transport, c.device = a.device, c.first = a.algo, c.second = b.algo;
      c.firstCarrier = a.carrier, c.secondCarrier = b.carrier, c.n = a.n;
      // a.a + a.b·S = b.a + b.b·S
      const double db = a.line.b - b.line.b, da = b.line.a - a.line.a;
      if (db != 0 && da / db > 0) {
        c.bytes = da / db;
        c.note = (a.line.a < b.line.a ? a.algo : b.algo) + " faster below, " +
                 (a.line.a < b.line.a ? b.algo : a.algo) + " above";
      } else {
        const bool aWins = a.line.a <= b.line.a && a.line.b <= b.line.b;
        c.note = (aWins ? a.algo : b.algo) + " faster at every size";
      }
      c.trusted = a.trusted() && b.trusted();
      checkAgainstMeasured(a, b, c);
      out.push_back(std::move(c));
    }
  return out;
}

const std::vector<LinkPreset>& linkPresets() {
  // Per-step latency: NCCL's tuning model (src/graph/tuning.cc, hwLat[..][Ring][Simple]: NVLink
  // 3.4 µs, PCI 5.7 µs, network 9.6 µs per ring step; NCCL 2.1x tables, newer versions refine
  // them). Link rates, per direction, from the vendors: H100 SXM5 NVLink 4 900 GB/s total
  // bidirectional per GPU (NVIDIA H100 datasheet) = 450 GB/s each way through NVSwitch; PCIe 4.0
  // x16 16 GT/s x 16 lanes, 128b/130b = 31.5 GB/s; PCIe 5.0 x16 = 63 GB/s (PCI-SIG); InfiniBand
  // NDR 400 Gb/s per port = 50 GB/s (NVIDIA ConnectX-7); 100 GbE = 12.5 GB/s (IEEE 802.3).
  // B200's NVLink 5: 1.8 TB/s bidirectional per GPU (NVIDIA Blackwell datasheet) = 900 GB/s each
  // way; InfiniBand XDR 800 Gb/s per port = 100 GB/s (NVIDIA ConnectX-8); 400 GbE = 50 GB/s.
  // V100 SXM2's NVLink 2: six links of 25 GB/s each way (300 GB/s bidirectional, NVIDIA V100
  // datasheet) = 150 GB/s each way, wired as DGX-1's hybrid cube-mesh; InfiniBand EDR 100 Gb/s
  // per port = 12.5 GB/s (NVIDIA ConnectX-5). The network presets are one port's rate: predict's
  // --nics_per_node says how many a node has.
  static const std::vector<LinkPreset> presets = {
      {"nvlink4", "NVLink 4 through NVSwitch (H100 SXM5, 8 GPUs in one node)", 3.4, 450.0,
       "NVIDIA H100 datasheet (900 GB/s bidirectional); NCCL tuning.cc hwLat NVLink ring"},
      {"nvlink5", "NVLink 5 through NVSwitch (B200, 8 GPUs in one node)", 3.4, 900.0,
       "NVIDIA B200 datasheet (1.8 TB/s bidirectional); NCCL tuning.cc hwLat NVLink ring"},
      {"nvlink2", "NVLink 2 (V100 SXM2, DGX-1's hybrid cube-mesh of 8 GPUs)", 3.4, 150.0,
       "NVIDIA V100 datasheet (300 GB/s bidirectional); NCCL tuning.cc hwLat NVLink ring"},
      {"pcie4", "PCIe 4.0 x16", 5.7, 31.5, "PCI-SIG PCIe 4.0; NCCL tuning.cc hwLat PCI ring"},
      {"pcie5", "PCIe 5.0 x16", 5.7, 63.0, "PCI-SIG PCIe 5.0; NCCL tuning.cc hwLat PCI ring"},
      {"ib_edr", "InfiniBand EDR, one 100 Gb/s port (across nodes)", 9.6, 12.5,
       "NVIDIA ConnectX-5 EDR 100 Gb/s; NCCL tuning.cc hwLat network ring"},
      {"ib_ndr", "InfiniBand NDR, one 400 Gb/s port (across nodes)", 9.6, 50.0,
       "NVIDIA ConnectX-7 NDR 400 Gb/s; NCCL tuning.cc hwLat network ring"},
      {"ib_xdr", "InfiniBand XDR, one 800 Gb/s port (across nodes)", 9.6, 100.0,
       "NVIDIA ConnectX-8 XDR 800 Gb/s; NCCL tuning.cc hwLat network ring"},
      {"eth400", "400 Gb Ethernet, one port (across nodes)", 9.6, 50.0,
       "IEEE 802.3 400GbE; NCCL tuning.cc hwLat network ring"},
      {"eth100", "100 Gb Ethernet, one port (across nodes)", 9.6, 12.5,
       "IEEE 802.3 100GbE; NCCL tuning.cc hwLat network ring"},
  };
  return presets;
}

std::string linkNames() {
  std::string names;
  for (const auto& l : linkPresets()) names += (names.empty() ? "" : ", ") + l.name;
  return names;
}

const LinkPreset& findLink(const std::string& name) {
  for (const auto& l : linkPresets())
    if (l.name == name) return l;
  TPB_THROW(UsageError, "--link: unknown link '" << name << "' (choose from " << linkNames() << ")");
}

Projection project(const Formula& f, double busFactor, const LinkPreset& link, int n, double bytes) {
  const Cost c = f.at(n);
  Projection p;
  p.us = c.steps * link.alphaUs + c.bytesFactor * bytes / (link.gbps * 1e3);  // GB/s = 1e3 bytes/µs
  p.busbwGbps = p.us > 0 ? bytes / (p.us * 1e3) * busFactor : 0;
  return p;
}

}  // namespace tpb::model
