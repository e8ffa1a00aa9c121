#pragma once
// UTF-8 at the edges: traces, environments and networks hand us bytes, but every proto3
// string and every JSON text must be valid UTF-8. One definition of "valid" (no overlongs,
// no surrogates, nothing past U+10FFFF) for the JSON writer, the readers' name caps and the
// summary's clean-up.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace fleetprof {

// Length of the valid UTF-8 sequence at s[i], or 0 when the byte there does not start one.
size_t Utf8SequenceLength(std::string_view s, size_t i);

// Removes an incomplete sequence from the end of `s` (what cutting a string at a byte cap
// leaves), so a cap never splits a character in half.
void TrimIncompleteUtf8Tail(std::string* s);
// The longest prefix of `s` of at most `max` bytes that does not end inside a sequence.
size_t Utf8CutPoint(std::string_view s, size_t max);

// Replaces every byte that is not part of a valid sequence with U+FFFD; returns how many.
int64_t MakeValidUtf8(std::string* s);

}  // namespace fleetprof
