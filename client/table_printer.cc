#include "client/table_printer.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace fleetprof {

TablePrinter::TablePrinter(std::vector<std::string> headers) {
  for (auto& h : headers) {
    bool right = !h.empty() && h[0] == '>';
    right_.push_back(right);
    headers_.push_back(right ? h.substr(1) : h);
  }
}

void TablePrinter::AddRow(std::vector<std::string> cells) {
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
}

std::string TablePrinter::Render() const {
  std::vector<size_t> width(headers_.size());
  for (size_t c = 0; c < headers_.size(); ++c) {
    width[c] = headers_[c].size();
    for (const auto& row : rows_) width[c] = std::max(width[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < cells.size(); ++c) {
      if (c > 0) out += "  ";
      std::string pad(width[c] - cells[c].size(), ' ');
      bool last = c + 1 == cells.size();
      out += right_[c] ? pad + cells[c] : (last ? cells[c] : cells[c] + pad);
    }
    return out + "\n";
  };
  std::string out = line(headers_);
  for (const auto& row : rows_) out += line(row);
  return out;
}

std::string FormatNanos(int64_t ns) {
  const double v = static_cast<double>(ns);
  int64_t mag = ns < 0 ? -ns : ns;
  if (mag >= 1'000'000'000) return absl::StrFormat("%.3f s", v / 1e9);
  if (mag >= 1'000'000) return absl::StrFormat("%.3f ms", v / 1e6);
  if (mag >= 1'000) return absl::StrFormat("%.3f us", v / 1e3);
  return absl::StrFormat("%d ns", ns);
}

std::string FormatPercent(int64_t part, int64_t total) {
  if (total == 0) return "-";
  return absl::StrFormat("%.1f%%", 100.0 * static_cast<double>(part) / static_cast<double>(total));
}

std::string Ellipsize(const std::string& s, size_t width) {
  if (s.size() <= width || width < 4) return s;
  return s.substr(0, width - 3) + "...";
}

}  // namespace fleetprof
