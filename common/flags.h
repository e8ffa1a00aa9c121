#pragma once
// Command-line flags for fleetprof's three binaries. One small parser so every binary
// accepts the same forms: `--name=value`, `--name value`, `--bool_flag`, `--no-bool_flag`;
// repeatable flags accumulate; flags may stand before or after positional arguments;
// `--` ends flag parsing.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace fleetprof {

class FlagSet {
 public:
  explicit FlagSet(std::string usage) : usage_(std::move(usage)) {}

  // Each Add* registers a flag bound to `*target`, which keeps its current value as default.
  void AddString(const std::string& name, std::string* target, const std::string& help);
  void AddInt(const std::string& name, int64_t* target, const std::string& help);
  void AddBool(const std::string& name, bool* target, const std::string& help);
  // Every occurrence appends one value.
  void AddRepeated(const std::string& name, std::vector<std::string>* target,
                   const std::string& help);

  // Parses argv[1..]. Non-flag words go to positional(). `--help`/`-h` sets help_requested().
  absl::Status Parse(int argc, char** argv);
  // Same, from an already split list (used by the CLI after it takes the command word).
  absl::Status Parse(const std::vector<std::string>& args);

  const std::vector<std::string>& positional() const { return positional_; }
  bool help_requested() const { return help_requested_; }
  // The flags the parsed command line set (a command checks they are its own).
  const std::set<std::string>& given() const { return given_; }
  // Every flag's name.
  std::vector<std::string> names() const;
  // Usage line plus one line per flag with its default.
  std::string HelpText() const;
  // The lines of HelpText for the flags in `names` only (no usage line, no --help).
  std::string FlagLines(const std::set<std::string>& names) const;

 private:
  enum class Kind { kString, kInt, kBool, kRepeated };
  struct Flag {
    Kind kind;
    void* target;
    std::string help;
    std::string default_text;
  };
  absl::Status Set(const std::string& name, Flag& flag, const std::string& value);

  std::string usage_;
  std::map<std::string, Flag> flags_;
  std::vector<std::string> positional_;
  std::set<std::string> given_;
  bool help_requested_ = false;
};

// INVALID_ARGUMENT "--NAME=VALUE: want MIN..MAX" unless MIN <= value <= MAX: the one wording of
// an out-of-range flag for every binary.
absl::Status CheckFlagRange(const char* name, int64_t value, int64_t min, int64_t max);

}  // namespace fleetprof
