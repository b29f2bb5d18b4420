// report/format.h — how numbers and sizes read in the report: prose and tables (fmtNum, fmtPct,
// fmtRatio, fmtBytes) and data files (fmtDat, enough digits to redraw faithfully).
#pragma once

#include <string>
#include <vector>

namespace tpb::report {

// snprintf of one double with a printf format such as "%.3g".
std::string printfStr(const char* fmt, double x);

// For prose and tables: 3 significant digits, whole numbers from 100 up (no 2.26e+04); "—" for
// NaN or infinity.
std::string fmtNum(double x);

// For .dat files and gnuplot scripts: "%.6g", "NaN" where not finite.
std::string fmtDat(double x);

// What a ratio or share reads as when its denominator is zero or not a number (a time of 0, a
// run with no communication): never "inf" or "nan".
inline constexpr const char* kNotApplicable = "n/a";

// 3.9 -> "3.9x"; 1234 -> "1234x"; kNotApplicable where x is not finite.
std::string fmtRatio(double x);

// 0.9456 -> "94.6 %"; kNotApplicable where the fraction is not finite.
std::string fmtPct(double fraction);

// 4096 -> "4K", 4194304 -> "4M", 1536 -> "1.5K" (binary units, as the CLI's --bytes takes them).
std::string fmtBytes(long long b);

// A whole number as text: 4 -> "4" (tic labels, N in readings).
std::string intLabel(double x);

std::string joinList(const std::vector<std::string>& xs, const std::string& sep);

}  // namespace tpb::report
