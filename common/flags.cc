#include "common/flags.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace fleetprof {

void FlagSet::AddString(const std::string& name, std::string* target, const std::string& help) {
  flags_[name] = {Kind::kString, target, help, *target};
}

void FlagSet::AddInt(const std::string& name, int64_t* target, const std::string& help) {
  flags_[name] = {Kind::kInt, target, help, absl::StrCat(*target)};
}

void FlagSet::AddBool(const std::string& name, bool* target, const std::string& help) {
  flags_[name] = {Kind::kBool, target, help, *target ? "true" : "false"};
}

void FlagSet::AddRepeated(const std::string& name, std::vector<std::string>* target,
                          const std::string& help) {
  flags_[name] = {Kind::kRepeated, target, help, absl::StrJoin(*target, ",")};
}

absl::Status FlagSet::Parse(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return Parse(args);
}

absl::Status FlagSet::Set(const std::string& name, Flag& flag, const std::string& value) {
  switch (flag.kind) {
    case Kind::kString:
      *static_cast<std::string*>(flag.target) = value;
      return absl::OkStatus();
    case Kind::kInt:
      if (!absl::SimpleAtoi(value, static_cast<int64_t*>(flag.target))) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", name, " wants an integer, got '", value, "'"));
      }
      return absl::OkStatus();
    case Kind::kBool:
      if (value == "true" || value == "1" || value == "yes") {
        *static_cast<bool*>(flag.target) = true;
      } else if (value == "false" || value == "0" || value == "no") {
        *static_cast<bool*>(flag.target) = false;
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("--", name, " wants true or false, got '", value, "'"));
      }
      return absl::OkStatus();
    case Kind::kRepeated:
      static_cast<std::vector<std::string>*>(flag.target)->push_back(value);
      return absl::OkStatus();
  }
  return absl::InternalError("unknown flag kind");
}

absl::Status FlagSet::Parse(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      positional_.insert(positional_.end(), args.begin() + i + 1, args.end());
      break;
    }
    if (arg == "-h" || arg == "--help" || arg == "-help") {
      help_requested_ = true;
      continue;
    }
    if (arg.size() < 2 || arg[0] != '-' || arg == "-") {
      positional_.push_back(arg);
      continue;
    }
    std::string body = arg.substr(arg[1] == '-' ? 2 : 1);
    std::string name = body;
    std::string value;
    bool has_value = false;
    if (size_t eq = body.find('='); eq != std::string::npos) {
      name = body.substr(0, eq);
      value = body.substr(eq + 1);
      has_value = true;
    }
    auto it = flags_.find(name);
    if (it == flags_.end() && !has_value && name.rfind("no-", 0) == 0) {
      auto negated = flags_.find(name.substr(3));
      if (negated != flags_.end() && negated->second.kind == Kind::kBool) {
        *static_cast<bool*>(negated->second.target) = false;
        given_.insert(negated->first);
        continue;
      }
    }
    if (it == flags_.end()) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name, " (see --help)"));
    }
    Flag& flag = it->second;
    if (!has_value) {
      if (flag.kind == Kind::kBool) {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
      }
    }
    if (absl::Status s = Set(name, flag, value); !s.ok()) return s;
    given_.insert(name);
  }
  return absl::OkStatus();
}

std::vector<std::string> FlagSet::names() const {
  std::vector<std::string> out;
  for (const auto& [name, flag] : flags_) out.push_back(name);
  return out;
}

std::string FlagSet::HelpText() const {
  std::set<std::string> all;
  for (const auto& [name, flag] : flags_) all.insert(name);
  return absl::StrCat(usage_, "\n\nFlags:\n", FlagLines(all), "  --help\n      Show this text.\n");
}

std::string FlagSet::FlagLines(const std::set<std::string>& names) const {
  std::string out;
  for (const auto& [name, flag] : flags_) {
    if (!names.contains(name)) continue;
    absl::StrAppend(&out, "  --", name);
    if (flag.kind == Kind::kRepeated) absl::StrAppend(&out, " (repeatable)");
    absl::StrAppend(&out, "\n      ", flag.help);
    // Zero and false usually mean "off" or "automatic", which the help text itself explains.
    const std::string& d = flag.default_text;
    if (!d.empty() && d != "0" && d != "false") absl::StrAppend(&out, " (default: ", d, ")");
    absl::StrAppend(&out, "\n");
  }
  return out;
}

absl::Status CheckFlagRange(const char* name, int64_t value, int64_t min, int64_t max) {
  if (value >= min && value <= max) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("--", name, "=", value, ": want ", min, "..", max));
}

}  // namespace fleetprof
