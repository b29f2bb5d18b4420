// report/page.cc — see page.h.
#include "report/page.h"

#include <sstream>
#include <utility>

#include "report/escape.h"

namespace tpb::report {

Inline text(std::string s) { return {Inline::Kind::Text, std::move(s), ""}; }
Inline code(std::string s) { return {Inline::Kind::Code, std::move(s), ""}; }
Inline bold(std::string s) { return {Inline::Kind::Bold, std::move(s), ""}; }
Inline link(std::string s, std::string href) {
  return {Inline::Kind::Link, std::move(s), std::move(href)};
}

Cell::Cell(std::string plain) : content{text(std::move(plain))} {}
Cell::Cell(const char* plain) : Cell(std::string(plain)) {}
Cell::Cell(Inlines content, std::string cls) : content(std::move(content)), cls(std::move(cls)) {}

Page::Page(std::string title) : title_(std::move(title)) {}

void Page::heading(int level, Inlines content, std::string anchor) {
  Block b(Block::Kind::Heading);
  b.level = level;
  b.content = std::move(content);
  b.anchor = std::move(anchor);
  blocks_.push_back(std::move(b));
}

void Page::paragraph(Inlines content, ParaStyle style, bool tight) {
  Block b(Block::Kind::Paragraph);
  b.content = std::move(content);
  b.style = style;
  b.tight = tight;
  blocks_.push_back(std::move(b));
}

void Page::image(std::string src, std::string alt, std::string href) {
  Block b(Block::Kind::Image);
  b.src = std::move(src);
  b.alt = std::move(alt);
  b.href = std::move(href);
  blocks_.push_back(std::move(b));
}

void Page::table(Table t) {
  Block b(Block::Kind::Table);
  b.table = std::move(t);
  blocks_.push_back(std::move(b));
}

// ------------------------------------------------------------------------------------------
// Markdown
// ------------------------------------------------------------------------------------------

namespace {

std::string markdownOf(const Inlines& content) {
  std::string out;
  for (const Inline& i : content) {
    switch (i.kind) {
      case Inline::Kind::Text:
        out += markdownText(i.text);
        break;
      case Inline::Kind::Code:
        out += markdownCode(i.text);
        break;
      case Inline::Kind::Bold:
        out += "**" + markdownText(i.text) + "**";
        break;
      case Inline::Kind::Link:
        if (!i.href.empty() && i.href[0] == '#') {
          out += markdownText(i.text);
        } else {
          out += "[" + markdownText(i.text) + "](" + i.href + ")";
        }
        break;
    }
  }
  return out;
}

std::string markdownRow(const std::vector<Cell>& cells) {
  std::string out = "|";
  for (const Cell& c : cells) out += " " + markdownOf(c.content) + " |";
  return out + "\n";
}

std::vector<Cell> headerCells(const Table& t) { return {t.header.begin(), t.header.end()}; }

std::string markdownTable(const Table& t) {
  if (t.rows.empty()) return "(none)\n";
  std::string out = markdownRow(headerCells(t)) + "|";
  for (std::size_t i = 0; i < t.header.size(); ++i) out += "---|";
  out += "\n";
  for (const auto& row : t.rows) out += markdownRow(row);
  return out;
}

// ------------------------------------------------------------------------------------------
// HTML
// ------------------------------------------------------------------------------------------

std::string htmlOf(const Inlines& content) {
  std::string out;
  for (const Inline& i : content) {
    switch (i.kind) {
      case Inline::Kind::Text:
        out += htmlText(i.text);
        break;
      case Inline::Kind::Code:
        out += "<code>" + htmlText(i.text) + "</code>";
        break;
      case Inline::Kind::Bold:
        out += "<b>" + htmlText(i.text) + "</b>";
        break;
      case Inline::Kind::Link:
        out += "<a href=\"" + htmlText(i.href) + "\">" + htmlText(i.text) + "</a>";
        break;
    }
  }
  return out;
}

// `<tag class="cls">` or `<tag>`.
std::string openTag(const std::string& tag, const std::string& cls) {
  return "<" + tag + (cls.empty() ? "" : " class=\"" + htmlText(cls) + "\"") + ">";
}

std::string htmlTable(const Table& t) {
  if (t.rows.empty()) return "<p>(none)</p>\n";
  // In a box that scrolls sideways: a wide table never widens the page (a narrow window).
  std::string out = "<div class=\"scroll\"><table>\n<tr>";
  for (const auto& h : t.header) out += "<th>" + htmlText(h) + "</th>";
  out += "</tr>\n";
  for (const auto& row : t.rows) {
    out += "<tr>";
    for (const Cell& c : row) out += openTag("td", c.cls) + htmlOf(c.content) + "</td>";
    out += "</tr>\n";
  }
  return out + "</table></div>\n";
}

const char* htmlClass(ParaStyle style) {
  switch (style) {
    case ParaStyle::Note:
      return "sub";
    case ParaStyle::Warning:
      return "skipped";
    case ParaStyle::Plain:
      break;
  }
  return "";
}

}  // namespace

// Block spacing, as the report has always been laid out: a heading has a blank line before it
// (but not at the top) and after it (but not before another heading), a paragraph or image has
// one after it unless tight, a table none (a paragraph after a table starts with one).
std::string Page::markdown() const {
  std::ostringstream os;
  for (std::size_t i = 0; i < blocks_.size(); ++i) {
    const Block& b = blocks_[i];
    switch (b.kind) {
      case Block::Kind::Heading: {
        const bool beforeHeading =
            i + 1 < blocks_.size() && blocks_[i + 1].kind == Block::Kind::Heading;
        os << (i ? "\n" : "") << std::string(static_cast<std::size_t>(b.level), '#') << " "
           << markdownOf(b.content) << "\n"
           << (beforeHeading ? "" : "\n");
        break;
      }
      case Block::Kind::Paragraph: {
        // After a table a blank line first: else Markdown reads the paragraph as one more row.
        if (i > 0 && blocks_[i - 1].kind == Block::Kind::Table) os << "\n";
        const std::string body = markdownOf(b.content);
        os << (b.style == ParaStyle::Note ? "*" + body + "*" : body) << (b.tight ? "\n" : "\n\n");
        break;
      }
      case Block::Kind::Image:
        os << "![" << markdownText(b.alt) << "](" << b.src << ")\n\n";
        break;
      case Block::Kind::Table:
        os << markdownTable(b.table);
        break;
    }
  }
  return os.str();
}

std::string Page::html() const {
  std::ostringstream os;
  os << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>"
     << htmlText(title_) << "</title>\n"
     << "<style>\n"
     << "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}\n"
     << "table{border-collapse:collapse;margin:1em 0;font-size:90%}\n"
     << "th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}\n"
     << "th{background:#f3f3f3}\nimg{max-width:100%;box-sizing:border-box;border:1px solid #eee}\n"
     << ".scroll{overflow-x:auto}\n"
     << ".skipped{color:#a33}\n.sub{color:#555;font-style:italic}\ncode{background:#f6f6f6}\n"
     << "</style>\n</head>\n<body>\n";
  for (const Block& b : blocks_) {
    switch (b.kind) {
      case Block::Kind::Heading: {
        const std::string tag = "h" + std::to_string(b.level);
        os << "<" << tag << (b.anchor.empty() ? "" : " id=\"" + htmlText(b.anchor) + "\"") << ">"
           << htmlOf(b.content) << "</" << tag << ">\n";
        break;
      }
      case Block::Kind::Paragraph:
        os << openTag("p", htmlClass(b.style)) << htmlOf(b.content) << "</p>\n";
        break;
      case Block::Kind::Image:
        // Relative references: the page opens from disk next to its images.
        os << "<p><a href=\"" << htmlText(b.href) << "\"><img src=\"" << htmlText(b.src)
           << "\" alt=\"" << htmlText(b.alt) << "\"></a></p>\n";
        break;
      case Block::Kind::Table:
        os << htmlTable(b.table);
        break;
    }
  }
  os << "</body>\n</html>\n";
  return os.str();
}

std::string csv(const Table& t) {
  auto line = [](const std::vector<Cell>& cells) {
    std::string out;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      std::string plain;
      for (const Inline& in : cells[i].content) plain += in.text;
      out += (i ? "," : "") + csvCell(plain);
    }
    return out + "\n";
  };
  std::string out = line(headerCells(t));
  for (const auto& row : t.rows) out += line(row);
  return out;
}

}  // namespace tpb::report
