#pragma once
// Helpers for the device/host metrics tests: read back a Prometheus exposition, capture spdlog
// output, and build a fake /proc tree in a temporary folder.

#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "prometheus/registry.h"
#include "spdlog/logger.h"

namespace fleetprof::testing {

// One line of a text exposition: name{labels} value.
struct ExposedSeries {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// The registry as prometheus::TextSerializer writes it for a scrape.
std::string SerializeRegistry(prometheus::Registry& registry);

// Parses the sample lines of a text exposition (comments skipped).
std::vector<ExposedSeries> ParseExposition(const std::string& text);

// Series called `name` whose labels include every pair in `labels`.
std::vector<ExposedSeries> FindSeries(const std::vector<ExposedSeries>& all,
                                      const std::string& name,
                                      const std::map<std::string, std::string>& labels = {});

// Value of the single series matching (name, labels); nullopt when none matches. Two or more
// matches fail the test, since the caller's labels were meant to pick one.
std::optional<double> ValueOf(const std::vector<ExposedSeries>& all, const std::string& name,
                              const std::map<std::string, std::string>& labels);

// Routes spdlog's default logger into memory while alive.
class CapturedLog {
 public:
  CapturedLog();
  ~CapturedLog();
  std::vector<std::string> Lines() const;
  // Lines containing `needle`.
  int Count(const std::string& needle) const;

 private:
  std::shared_ptr<std::ostringstream> stream_;
  std::shared_ptr<spdlog::logger> previous_;
};

// A temporary folder laid out like /proc; removed on destruction.
class FakeProcTree {
 public:
  FakeProcTree();
  ~FakeProcTree();
  const std::string& root() const { return root_; }
  // Writes root/relative, creating folders on the way.
  void Write(const std::string& relative, const std::string& contents) const;
  // Removes root/relative (a file or a whole folder such as a pid).
  void Remove(const std::string& relative) const;

 private:
  std::string root_;
};

}  // namespace fleetprof::testing
