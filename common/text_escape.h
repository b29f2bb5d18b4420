// common/text_escape.h — text from files, flags or error messages made plain for the two sinks
// that sit below the report layer: the terminal (printable) and Markdown (markdownText, which
// compare's markdown and the report's index.md share). Header-only: record/ uses common/ alone.
#pragma once

#include <cstdio>
#include <string>

namespace tpb {

namespace detail {

inline std::string hexByte(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
  return buf;
}

// Length of the well-formed UTF-8 sequence at s[i] (no overlongs, no surrogates, at most
// U+10FFFF) and its code point; 0 when the bytes there are not one.
inline std::size_t utf8At(const std::string& s, std::size_t i, char32_t& cp) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  std::size_t n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? (c < 0xf0 ? 3 : 0) : c >= 0xc2 ? 2 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  cp = c & (0xff >> (n + 1));
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b(k) & 0x3f);
  }
  const char32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < least[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

// Code points a terminal acts on or that reorder what it shows: C1 controls (U+0080..U+009F,
// 0x9b is CSI) and the bidirectional overrides and isolates ("Trojan Source").
inline bool isFormatControl(char32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace detail

// A message of at most `max` bytes (max >= 64): a longer one keeps its start and its end around
// "... (N bytes left out) ...", cut at UTF-8 boundaries. An error that quotes a 120 KB flag or
// line stays one readable line, in a terminal and in a results file.
inline std::string shortened(const std::string& s, std::size_t max = 2000) {
  if (s.size() <= max) return s;
  const auto back = [&](std::size_t i) {  // to the start of the UTF-8 sequence at or before i
    while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
    return i;
  };
  const std::size_t head = back(max * 3 / 4), tail = back(s.size() - max / 5);
  return s.substr(0, head) + " ... (" + std::to_string(tail - head) + " bytes left out) ... " + s.substr(tail);
}

// For a terminal: every C0 control (newline and tab included), DEL, C1 control, bidi override and
// byte that is not well-formed UTF-8 becomes a visible escape ("\x1b", "\n", "\u009b"), so a
// name from a file cannot move the cursor, recolour, retitle or clear the terminal, nor end the
// line it is printed on. Other text, UTF-8 included ("µs", "—"), passes unchanged.
inline std::string printable(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += s[i++];
      continue;
    }
    if (c == '\n' || c == '\t' || c == '\r') {
      out += c == '\n' ? "\\n" : c == '\t' ? "\\t" : "\\r";
      ++i;
      continue;
    }
    char32_t cp = 0;
    const std::size_t n = c >= 0x80 ? detail::utf8At(s, i, cp) : 0;
    if (n == 0) {
      out += detail::hexByte(c);
      ++i;
    } else if (detail::isFormatControl(cp)) {
      char buf[12];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      out += buf;
      i += n;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  return out;
}

// One line of text for a file a person reads (Markdown, a gnuplot comment): line breaks become
// spaces, every other control a visible escape as in printable.
inline std::string printableLine(const std::string& s) {
  std::string flat = s;
  for (char& c : flat)
    if (c == '\n' || c == '\r') c = ' ';
  return printable(flat);
}

// Markdown text, in a table cell or in prose, that renders as exactly the text it holds: line
// breaks (would end the row or paragraph) become spaces, other controls visible escapes
// (printable); '\' '`' '*' '[' ']' '|' '~' are backslash-escaped ('|' would end a cell, the
// others start code, emphasis, links and images, strikethrough; a lone '\' would escape what
// follows it), '_' too unless it sits between two letters or digits, where CommonMark never
// takes it as emphasis (so ring_all_reduce reads as it is); '<' '>' '&' become entities (raw
// HTML, autolinks, entity references). With '[' and ']' escaped no link can form, whatever
// "javascript:" or "(...)" the text holds.
inline std::string markdownText(const std::string& s) {
  const std::string text = printableLine(s);
  const auto alnum = [&](std::size_t i) {
    if (i >= text.size()) return false;
    const auto c = static_cast<unsigned char>(text[i]);
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  };
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else if (c == '&') {
      out += "&amp;";
    } else if (std::string("\\`*[]|~").find(c) != std::string::npos ||
               (c == '_' && !(i > 0 && alnum(i - 1) && alnum(i + 1)))) {
      out += '\\';
      out += c;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace tpb
