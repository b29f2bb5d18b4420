// report/escape.h — one escaper per output the report writes. Results files are untrusted input:
// a strategy, algorithm, device or meta field may hold quotes, newlines, markup or shell text,
// and each of these makes it plain text in its output. Ordinary names and numbers pass
// unchanged, so a report of ordinary results reads as it always did.
#pragma once

#include <string>

#include "common/text_escape.h"
#include "record/records.h"

namespace tpb::report {

// A gnuplot double-quoted string literal, quotes included. '\' and '"' are backslash-escaped, a
// newline becomes \n, and every other control character and the backquote become octal escapes
// (\140 for '`'): gnuplot runs back-quoted text inside double quotes as a shell command, and with
// no backquote left in the literal there is nothing to run; gnuplot still shows a '`'. Text in
// a string literal is never evaluated, so system(...) or @macro in it stay text.
std::string gnuplotString(const std::string& s);

// isHexColor ("#rrggbb") comes from record/records.h, which checks colours read from files.
using tpb::isHexColor;

// A colour for a gnuplot script, quoted: "'#rrggbb'". Every colour the report writes into a .gp
// file goes through here; anything but "#rrggbb" throws tpb::Error (report/style.h only hands
// out validated colours, so that would be a bug, never untrusted text reaching gnuplot).
std::string gnuplotColor(const std::string& color);

// Text for a '#' comment line of a gnuplot script or data file: line breaks become spaces and
// other controls visible escapes, so the text cannot end the comment and start a command or a
// data row; a trailing '\' gets a space after it, so it cannot continue the comment onto the
// next line (gnuplot joins a line ending in '\' with the next, comments included).
std::string gnuplotComment(const std::string& s);

// HTML element content or a double-quoted attribute value: & < > " become entities.
std::string htmlText(const std::string& s);

// Markdown text, in a table cell or in prose (common/text_escape.h; compare's markdown uses it
// too): renders as exactly the text it holds, one cell, no markup, no link.
using tpb::markdownText;

// A Markdown code span, backquotes included: line breaks become spaces, other controls visible
// escapes (printableLine), and a value holding backquotes is fenced with more of them than it
// has in a row (CommonMark), so it cannot end the span early.
std::string markdownCode(const std::string& s);

// One CSV cell (RFC 4180): a value holding ',', '"' or a line break is double-quoted with '"'
// doubled. A value that a spreadsheet would take as a formula (starting with = + - @ and not a
// number), or with a tab or carriage return (which some spreadsheets skip before a formula),
// gets a leading "'", so opening the CSV runs nothing.
std::string csvCell(const std::string& s);

}  // namespace tpb::report
