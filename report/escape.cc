// report/escape.cc — see escape.h.
#include "report/escape.h"

#include <cstdio>
#include <cstdlib>

#include "common/error.h"

namespace tpb::report {

namespace {

std::string octal(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\%03o", static_cast<unsigned>(c));
  return buf;
}

// True for a decimal number strtod reads whole ("-1.5", "+3e4"): such a cell is data, not a
// formula, and is left as it is. strtod's other forms ("-inf", "-0x1f", "+nan") are not: a
// spreadsheet would evaluate them.
bool isNumber(const std::string& s) {
  if (s.empty() || s.find_first_not_of("0123456789+-.eE") != std::string::npos) return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

}  // namespace

std::string gnuplotColor(const std::string& color) {
  if (!isHexColor(color))
    TPB_THROW(Error, "report: not a colour \"#rrggbb\": " << gnuplotString(color));
  return "'" + color + "'";
}

std::string gnuplotString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '`' || u < 0x20 || u == 0x7f) {
      out += octal(u);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string gnuplotComment(const std::string& s) {
  std::string out = printableLine(s);
  if (!out.empty() && out.back() == '\\') out += ' ';
  return out;
}

std::string htmlText(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string markdownCode(const std::string& s) {
  std::string text = printableLine(s);
  std::size_t run = 0, longest = 0;
  for (char& c : text) {
    run = c == '`' ? run + 1 : 0;
    if (run > longest) longest = run;
  }
  if (longest == 0) return "`" + text + "`";
  const std::string fence(longest + 1, '`');
  return fence + " " + text + " " + fence;
}

std::string csvCell(const std::string& s) {
  std::string value = s;
  if (!value.empty() && std::string("=+-@\t\r").find(value[0]) != std::string::npos && !isNumber(value))
    value = "'" + value;
  if (value.find_first_of(",\"\n\r") == std::string::npos) return value;
  std::string out = "\"";
  for (char c : value) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace tpb::report
