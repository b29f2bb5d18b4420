// report/page.h — one model of the index page (headings, paragraphs, images, tables) written out
// as Markdown (index.md) and as HTML (index.html), and tables as CSV. Content is built once; the
// two writers differ only in syntax, and every piece of text goes through its output's escaper
// (report/escape.h), so a value from a results file is text in every output.
#pragma once

#include <string>
#include <vector>

namespace tpb::report {

// A run of text in one form.
struct Inline {
  enum class Kind { Text, Code, Bold, Link };
  Kind kind = Kind::Text;
  std::string text;
  // Link target: a file next to the page, or "#id" for a heading in it. Markdown has no
  // heading ids, so there an in-page link is written as its text alone.
  std::string href;
};
using Inlines = std::vector<Inline>;

Inline text(std::string s);
Inline code(std::string s);
Inline bold(std::string s);
Inline link(std::string s, std::string href);

struct Cell {
  Cell(std::string plain);  // NOLINT(google-explicit-constructor): a plain-text cell
  Cell(const char* plain);  // NOLINT(google-explicit-constructor)
  Cell(Inlines content, std::string cls = "");
  Inlines content;
  std::string cls;  // HTML class of the cell; nothing in Markdown or CSV
};

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<Cell>> rows;  // none: written as "(none)"
};

enum class ParaStyle {
  Plain,
  Note,     // a subtitle: Markdown *italic*, HTML class "sub"
  Warning,  // HTML class "skipped"
};

class Page {
 public:
  explicit Page(std::string title);

  // `anchor`: the HTML id, to link to it with "#anchor".
  void heading(int level, Inlines content, std::string anchor = "");
  // `tight`: in Markdown, no blank line of its own after it (a heading brings one before it).
  void paragraph(Inlines content, ParaStyle style = ParaStyle::Plain, bool tight = false);
  // An image `src` that links to `href` in HTML (Markdown: the image alone).
  void image(std::string src, std::string alt, std::string href);
  void table(Table t);

  std::string markdown() const;
  std::string html() const;

 private:
  struct Block {
    enum class Kind { Heading, Paragraph, Image, Table };
    explicit Block(Kind k) : kind(k) {}
    Kind kind;
    int level = 0;
    std::string anchor;
    Inlines content;
    ParaStyle style = ParaStyle::Plain;
    bool tight = false;
    std::string src, alt, href;
    Table table;
  };
  std::string title_;
  std::vector<Block> blocks_;
};

// Header and rows, one line each; cells as their plain text.
std::string csv(const Table& t);

}  // namespace tpb::report
