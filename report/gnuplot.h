// report/gnuplot.h — finding and running gnuplot. A chart's script runs in its own process in
// the report directory, with stdin and stdout at /dev/null, stderr captured for the reason a
// chart was not drawn, and a time limit.
#pragma once

#include <string>

namespace tpb::report {

// The absolute path gnuplot will be executed from, or "" when there is none: a name with '/' is
// taken from the current directory, a bare name is searched in PATH (what execvp would do,
// decided before forking); either must be an executable regular file.
std::string findGnuplot(const std::string& name);

// Runs `bin script` in `dir`. Returns "" on success, else a one-line reason ("gnuplot failed:
// <gnuplot's error line>", or that it was stopped after 120 s).
std::string runGnuplot(const std::string& bin, const std::string& dir, const std::string& script);

}  // namespace tpb::report
