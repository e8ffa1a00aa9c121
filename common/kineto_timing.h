#pragma once
// When a PyTorch job can start a time-based trace that a daemon hands it (libkineto's own rules,
// docs/protocols.md, When a time-based trace may start): the job takes a config only at its next
// poll, and refuses a start that is in the past or closer than its warm-up, silently for everyone
// but its own log. These are the facts the server's shared start and the agent's hand-out both plan
// with: one definition each.

#include <cstdint>

namespace fleetprof {

// How often a libkineto client asks the node daemon for a config (its default).
inline constexpr int64_t kKinetoPollIntervalMs = 5'000;
// The warm-up the agent asks for explicitly (ACTIVITIES_WARMUP_PERIOD_SECS); libkineto's default.
inline constexpr int64_t kKinetoWarmupSecs = 5;
inline constexpr int64_t kKinetoWarmupMs = kKinetoWarmupSecs * 1'000;
// Slack for the reply's trip and the job's 1 s controller tick.
inline constexpr int64_t kKinetoStartMarginMs = 1'000;
// The soonest start a capture shares with a Kineto target, counted from when its config is
// queued: the job may poll only a full interval later and must then still have its warm-up.
inline constexpr int64_t kKinetoStartLeadMs = kKinetoPollIntervalMs + kKinetoWarmupMs + kKinetoStartMarginMs;
// libkineto treats a start this far in the past as an invalid config, not merely a late one.
inline constexpr int64_t kKinetoMaxStartAgeMs = 10'000;
// With no start time, the trace starts this long after the warm-up (two ticks of its loop).
inline constexpr int64_t kKinetoUnsetStartDelayMs = 2'000;

}  // namespace fleetprof
