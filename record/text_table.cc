#include "record/text_table.h"

#include <algorithm>
#include <sstream>

#include "common/text_escape.h"

namespace tpb {

std::string textTable(const std::vector<std::string>& head, std::vector<std::vector<std::string>> rows) {
  rows.insert(rows.begin(), head);
  std::vector<std::size_t> width(head.size(), 0);
  for (auto& row : rows)
    for (std::size_t i = 0; i < row.size(); ++i) {
      row[i] = printable(row[i]);
      if (i < width.size()) width[i] = std::max(width[i], row[i].size());
    }
  std::ostringstream os;
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      os << row[i];
      if (i + 1 < row.size() && i < width.size()) os << std::string(width[i] - row[i].size() + 2, ' ');
    }
    os << "\n";
  }
  return os.str();
}

std::string markdownTable(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& rows) {
  std::ostringstream os;
  os << "|";
  for (const auto& h : head) os << " " << markdownText(h) << " |";
  os << "\n|";
  for (std::size_t i = 0; i < head.size(); ++i) os << "---|";
  os << "\n";
  for (const auto& row : rows) {
    os << "|";
    for (const auto& x : row) os << " " << markdownText(x) << " |";
    os << "\n";
  }
  return os.str();
}

}  // namespace tpb
