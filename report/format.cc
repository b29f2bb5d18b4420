// report/format.cc — see format.h.
#include "report/format.h"

#include <cmath>
#include <cstdio>

namespace tpb::report {

std::string printfStr(const char* fmt, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, x);
  return buf;
}

std::string fmtNum(double x) {
  if (!std::isfinite(x)) return "—";
  if (std::fabs(x) >= 100) return printfStr("%.0f", x);
  return printfStr("%.3g", x);
}

std::string fmtDat(double x) { return std::isfinite(x) ? printfStr("%.6g", x) : "NaN"; }

std::string fmtRatio(double x) {
  if (!std::isfinite(x)) return kNotApplicable;
  return printfStr(x < 1000 ? "%.3g" : "%.0f", x) + "x";
}

std::string fmtPct(double fraction) {
  if (!std::isfinite(fraction)) return kNotApplicable;
  return printfStr("%.1f", fraction * 100) + " %";
}

std::string fmtBytes(long long b) {
  const char* units[] = {"", "K", "M", "G", "T"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  return printfStr("%.4g", v) + units[u];
}

std::string intLabel(double x) { return printfStr("%.0f", x); }

std::string joinList(const std::vector<std::string>& xs, const std::string& sep) {
  std::string s;
  for (const auto& x : xs) s += (s.empty() ? "" : sep) + x;
  return s;
}

}  // namespace tpb::report
