#include "server/query/label_selector.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace fleetprof {
namespace {

// A cursor over the selector's text with the errors it reports.
class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  void SkipSpace() {
    while (pos_ < text_.size() && absl::ascii_isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return AtEnd() ? '\0' : text_[pos_]; }
  bool Take(char c) {
    if (Peek() != c) return false;
    ++pos_;
    return true;
  }
  std::string_view Name() {
    const size_t start = pos_;
    while (!AtEnd() && (absl::ascii_isalnum(static_cast<unsigned char>(Peek())) || Peek() == '_')) ++pos_;
    return text_.substr(start, pos_ - start);
  }
  absl::StatusOr<LabelMatcher::Op> Op() {
    if (Take('=')) return Take('~') ? LabelMatcher::Op::kRegex : LabelMatcher::Op::kEqual;
    if (Take('!')) {
      if (Take('=')) return LabelMatcher::Op::kNotEqual;
      if (Take('~')) return LabelMatcher::Op::kNotRegex;
    }
    return Error("an operator (=, !=, =~ or !~)");
  }
  // A quoted value: "…" and '…' with backslash escapes, `…` as it is.
  absl::StatusOr<std::string> Quoted() {
    const char quote = Peek();
    if (quote != '"' && quote != '\'' && quote != '`') return Error("a quoted value");
    ++pos_;
    std::string value;
    while (!AtEnd() && Peek() != quote) {
      char c = text_[pos_++];
      if (c == '\\' && quote != '`' && !AtEnd()) {
        c = text_[pos_++];
        if (c == 'n') c = '\n';
        if (c == 't') c = '\t';
      }
      value.push_back(c);
    }
    if (!Take(quote)) return Error(absl::StrCat("the closing ", std::string(1, quote)));
    return value;
  }
  absl::Status Error(std::string_view expected) const {
    return absl::InvalidArgumentError(absl::StrCat("bad label selector '", std::string(text_), "': expected ",
                                                   std::string(expected),
                                                   " at offset ", pos_,
                                                   " (the form is {name=\"value\", …} with =, !=, =~ or !~)"));
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

bool IsLabelName(std::string_view name) {
  if (name.empty() || absl::ascii_isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool LabelMatcher::Matches(std::string_view label_value) const {
  switch (op) {
    case Op::kEqual: return label_value == value;
    case Op::kNotEqual: return label_value != value;
    case Op::kRegex: return RE2::FullMatch(re2::StringPiece(label_value.data(), label_value.size()), *regex);
    case Op::kNotRegex: return !RE2::FullMatch(re2::StringPiece(label_value.data(), label_value.size()), *regex);
  }
  return false;
}

absl::StatusOr<LabelSelector> LabelSelector::Parse(std::string_view text) {
  LabelSelector selector;
  Reader in(text);
  in.SkipSpace();
  if (in.AtEnd()) return selector;
  if (!in.Take('{')) return in.Error("'{'");
  for (;;) {
    in.SkipSpace();
    if (in.Take('}')) break;
    LabelMatcher m;
    m.name = std::string(in.Name());
    if (!IsLabelName(m.name)) return in.Error("a label name ([a-zA-Z_][a-zA-Z0-9_]*) or '}'");
    in.SkipSpace();
    absl::StatusOr<LabelMatcher::Op> op = in.Op();
    if (!op.ok()) return op.status();
    m.op = *op;
    in.SkipSpace();
    absl::StatusOr<std::string> value = in.Quoted();
    if (!value.ok()) return value.status();
    m.value = std::move(*value);
    if (m.op == LabelMatcher::Op::kRegex || m.op == LabelMatcher::Op::kNotRegex) {
      RE2::Options options;
      options.set_log_errors(false);
      auto regex = std::make_shared<const RE2>(re2::StringPiece(m.value), options);
      if (!regex->ok()) {
        return absl::InvalidArgumentError(absl::StrCat("bad label selector '", std::string(text), "': the regex of ", m.name,
                                                       " does not compile: ", regex->error()));
      }
      m.regex = std::move(regex);
    }
    selector.matchers_.push_back(std::move(m));
    in.SkipSpace();
    if (in.Take('}')) break;
    if (!in.Take(',')) return in.Error("',' or '}'");
  }
  in.SkipSpace();
  if (!in.AtEnd()) return in.Error("the end after '}'");
  return selector;
}

bool LabelSelector::Matches(const LabelSet& labels) const {
  for (const LabelMatcher& m : matchers_) {
    auto it = std::lower_bound(labels.begin(), labels.end(), m.name,
                               [](const auto& label, const std::string& name) { return label.first < name; });
    const std::string_view value = it != labels.end() && it->first == m.name ? std::string_view(it->second) : "";
    if (!m.Matches(value)) return false;
  }
  return true;
}

const std::string* LabelSelector::RequiredValue(std::string_view name) const {
  for (const LabelMatcher& m : matchers_) {
    if (m.op == LabelMatcher::Op::kEqual && m.name == name) return &m.value;
  }
  return nullptr;
}

absl::StatusOr<std::vector<LabelSelector>> ParseLabelSelectors(const std::vector<std::string>& texts) {
  std::vector<LabelSelector> selectors;
  for (const std::string& text : texts) {
    absl::StatusOr<LabelSelector> selector = LabelSelector::Parse(text);
    if (!selector.ok()) return selector.status();
    selectors.push_back(std::move(*selector));
  }
  return selectors;
}

}  // namespace fleetprof
