// report/escape.h — one escaper per output the report writes.
#pragma once

#include <string>

namespace tpb::report {

// A gnuplot double-quoted string literal, quotes included: backslash escapes are interpreted
// there, so '\\' and '"' are escaped and a newline becomes \n.
std::string gnuplotString(const std::string& s);

// HTML element content or a double-quoted attribute value: & < > " become entities.
std::string htmlText(const std::string& s);

// Markdown text, in a table cell or in prose: '|' would end a cell, a newline the row.
std::string markdownText(const std::string& s);

// A Markdown code span, backquotes included.
std::string markdownCode(const std::string& s);

// One CSV cell: a value holding ',', '"' or a newline is double-quoted with '"' doubled.
std::string csvCell(const std::string& s);

}  // namespace tpb::report
