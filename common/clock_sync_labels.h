#pragma once
// The labels a captured profile carries about its node's clock (agent_sync, docs/using.md,
// Job timeline): written by the agent at upload, read by the job timeline's queries.
//   clock_offset_ns       the server's wall clock - the agent's, measured over its stream
//   clock_uncertainty_ns  ± of that offset (half the best probe's round trip)
//   capture_start_unix_ns the capture's start on the agent's wall clock
//   capture_window_ns     how long the capture could run (its duration, else until its deadline)
namespace fleetprof {

inline constexpr char kClockOffsetLabel[] = "clock_offset_ns";
inline constexpr char kClockUncertaintyLabel[] = "clock_uncertainty_ns";
inline constexpr char kCaptureStartLabel[] = "capture_start_unix_ns";
inline constexpr char kCaptureWindowLabel[] = "capture_window_ns";

}  // namespace fleetprof
