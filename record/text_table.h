// record/text_table.h — a table of cells as the commands print it: aligned plain text (every cell
// made printable: names from files reach the terminal) or Markdown (every cell escaped, so it
// stays one cell of plain text). compare and history print theirs through it.
#pragma once

#include <string>
#include <vector>

namespace tpb {

// Columns two spaces apart, each as wide as its widest cell; a line per row, the head first.
std::string textTable(const std::vector<std::string>& head, std::vector<std::vector<std::string>> rows);
// "| a | b |", "|---|---|", then a line per row.
std::string markdownTable(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& rows);

}  // namespace tpb
