#pragma once
// Paths the agent (running as root) builds from values other processes chose: environment
// variables, dynolog requests, Kineto configs, capture ids. Every such path goes through
// here, so a "../", a "/", a NUL byte or a symlink can never point outside the agent's own
// folders, and a file is read only when it belongs to the process that was traced.

#include <sys/types.h>

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace fleetprof {

// 1..128 characters of A-Z a-z 0-9 . _ -, not starting with '.': safe as one path component.
bool IsSafeFileName(std::string_view name);

// `text` made into a safe file name: every other byte becomes '_', cut to 128 characters,
// a leading '.' replaced. Never empty ("_" for empty input).
std::string SafeFileName(std::string_view text);

// The path of a file directly inside `dir` that `candidate` names, when `candidate` is an
// absolute path whose parent is `dir` (after removing "." and duplicate slashes) and whose
// file name is safe; INVALID_ARGUMENT naming the rule otherwise. No ".." is accepted.
absl::StatusOr<std::string> FileDirectlyIn(const std::string& dir, std::string_view candidate);

// Creates `dir` (and missing parents) as a folder that jobs of any user can write into but
// not list, where nobody may delete another's files (mode 1733, owned by this process), or
// checks that an existing one is exactly that: a pre-created folder of another user or a
// symlink is refused, since its owner could swap files under us.
absl::Status EnsureSharedDropFolder(const std::string& dir);

// OK when `path` is a regular file (not a symlink, one link) owned by `uid`; the reason
// otherwise. A uid of -1 accepts any owner but still refuses links.
absl::Status CheckOwnedRegularFile(const std::string& path, int64_t uid);

// The real uid of process `pid` under `proc_root` (from status), -1 if unreadable.
int64_t ProcessUid(const std::string& proc_root, int32_t pid);

}  // namespace fleetprof
