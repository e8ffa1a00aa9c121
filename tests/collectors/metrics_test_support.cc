#include "tests/collectors/metrics_test_support.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"

namespace fleetprof::testing {
namespace {

// Reads a quoted label value starting after the opening quote; undoes the exposition escapes.
std::string ReadLabelValue(const std::string& line, size_t& pos) {
  std::string value;
  while (pos < line.size() && line[pos] != '"') {
    if (line[pos] == '\\' && pos + 1 < line.size()) {
      ++pos;
      value += line[pos] == 'n' ? '\n' : line[pos];
    } else {
      value += line[pos];
    }
    ++pos;
  }
  ++pos;  // closing quote
  return value;
}

}  // namespace

std::string SerializeRegistry(prometheus::Registry& registry) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry.Collect());
  return out.str();
}

std::vector<ExposedSeries> ParseExposition(const std::string& text) {
  std::vector<ExposedSeries> all;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    ExposedSeries series;
    size_t pos = line.find_first_of("{ ");
    series.name = line.substr(0, pos);
    if (pos != std::string::npos && line[pos] == '{') {
      ++pos;
      while (pos < line.size() && line[pos] != '}') {
        size_t equals = line.find('=', pos);
        std::string name = line.substr(pos, equals - pos);
        pos = equals + 2;  // past ="
        series.labels[name] = ReadLabelValue(line, pos);
        if (pos < line.size() && line[pos] == ',') ++pos;
      }
      ++pos;  // closing brace
    }
    series.value = std::strtod(line.c_str() + pos, nullptr);
    all.push_back(std::move(series));
  }
  return all;
}

std::vector<ExposedSeries> FindSeries(const std::vector<ExposedSeries>& all,
                                      const std::string& name,
                                      const std::map<std::string, std::string>& labels) {
  std::vector<ExposedSeries> found;
  for (const ExposedSeries& series : all) {
    if (series.name != name) continue;
    bool matches = true;
    for (const auto& [key, value] : labels) {
      auto it = series.labels.find(key);
      if (it == series.labels.end() || it->second != value) matches = false;
    }
    if (matches) found.push_back(series);
  }
  return found;
}

std::optional<double> ValueOf(const std::vector<ExposedSeries>& all, const std::string& name,
                              const std::map<std::string, std::string>& labels) {
  std::vector<ExposedSeries> found = FindSeries(all, name, labels);
  EXPECT_LE(found.size(), 1u) << "labels match several " << name << " series";
  if (found.empty()) return std::nullopt;
  return found.front().value;
}

CapturedLog::CapturedLog()
    : stream_(std::make_shared<std::ostringstream>()), previous_(spdlog::default_logger()) {
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(*stream_, /*force_flush=*/true);
  auto logger = std::make_shared<spdlog::logger>("captured", sink);
  logger->set_pattern("%l %v");
  logger->set_level(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

CapturedLog::~CapturedLog() { spdlog::set_default_logger(previous_); }

std::vector<std::string> CapturedLog::Lines() const {
  std::vector<std::string> lines;
  std::istringstream in(stream_->str());
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

int CapturedLog::Count(const std::string& needle) const {
  int count = 0;
  for (const std::string& line : Lines()) count += line.find(needle) != std::string::npos;
  return count;
}

FakeProcTree::FakeProcTree() {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "fleetprof-proc-XXXXXX").string();
  char* made = ::mkdtemp(pattern.data());
  EXPECT_NE(made, nullptr) << "mkdtemp failed";
  root_ = pattern;
}

FakeProcTree::~FakeProcTree() {
  std::error_code ignored;
  std::filesystem::remove_all(root_, ignored);
}

void FakeProcTree::Write(const std::string& relative, const std::string& contents) const {
  std::filesystem::path path = std::filesystem::path(root_) / relative;
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

void FakeProcTree::Remove(const std::string& relative) const {
  std::filesystem::remove_all(std::filesystem::path(root_) / relative);
}

}  // namespace fleetprof::testing
