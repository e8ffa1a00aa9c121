#pragma once
// Aligned text tables for the CLI's human output.

#include <string>
#include <vector>

namespace fleetprof {

class TablePrinter {
 public:
  // Columns whose header starts with '>' are right-aligned (numbers); the '>' is not printed.
  explicit TablePrinter(std::vector<std::string> headers);
  void AddRow(std::vector<std::string> cells);
  std::string Render() const;

 private:
  std::vector<std::string> headers_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

// 1234567 ns -> "1.235 ms"; human-readable, never used for stored values.
std::string FormatNanos(int64_t ns);
// "12.3%" of total (or "-" when total is 0).
std::string FormatPercent(int64_t part, int64_t total);
// Shortens a long kernel name to `width` characters with an ellipsis.
std::string Ellipsize(const std::string& s, size_t width);

}  // namespace fleetprof
