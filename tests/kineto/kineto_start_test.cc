// The hand-out checks of a time-based Kineto config (collectors/kineto_start.h) against
// libkineto's rules as docs/protocols.md (When a time-based trace may start) states them: refused
// in the past or within the warm-up, invalid more than 10 s in the past, no check for iteration
// traces, snapshots and unset starts.

#include "collectors/kineto_start.h"

#include "common/kineto_timing.h"
#include "gtest/gtest.h"

namespace fleetprof {
namespace {

using Outcome = KinetoStartDecision::Outcome;
constexpr int64_t kNow = 1'800'000'000'000;  // ms since the epoch

KinetoTraceRequest StartingIn(int64_t ms, int64_t warmup_secs = -1) {
  KinetoTraceRequest request;
  request.duration_ms = 500;
  request.start_time_unix_ms = kNow + ms;
  request.warmup_secs = warmup_secs;
  return request;
}

TEST(KinetoStart, AFixedStartTheJobCanMeetIsHandedOutAsAsked) {
  for (int64_t ahead : {kKinetoWarmupMs, kKinetoWarmupMs + 1, kKinetoStartLeadMs}) {
    const KinetoStartDecision d = DecideKinetoStart(StartingIn(ahead), kNow, /*may_move=*/false);
    EXPECT_EQ(d.outcome, Outcome::kAsAsked) << ahead;
    EXPECT_EQ(d.start_time_unix_ms, kNow + ahead);
  }
}

TEST(KinetoStart, AFixedStartWithinTheWarmUpIsRefusedInLibkinetosWords) {
  for (int64_t ahead : {int64_t{0}, kKinetoWarmupMs - 1, int64_t{1000}}) {
    const KinetoStartDecision d = DecideKinetoStart(StartingIn(ahead), kNow, false);
    EXPECT_EQ(d.outcome, Outcome::kRefused) << ahead;
    EXPECT_NE(d.reason.find("insufficient time for warmup"), std::string::npos) << d.reason;
  }
  // The warm-up the config asks for is the one that counts.
  EXPECT_EQ(DecideKinetoStart(StartingIn(2500, 2), kNow, false).outcome, Outcome::kAsAsked);
  EXPECT_EQ(DecideKinetoStart(StartingIn(1500, 2), kNow, false).outcome, Outcome::kRefused);
}

TEST(KinetoStart, AFixedStartInThePastIsRefusedAndOneOverTenSecondsOldIsInvalid) {
  const KinetoStartDecision past = DecideKinetoStart(StartingIn(-2657), kNow, false);
  EXPECT_EQ(past.outcome, Outcome::kRefused);
  EXPECT_NE(past.reason.find("start timestamp is in the past by 2657 ms"), std::string::npos) << past.reason;
  const KinetoStartDecision old = DecideKinetoStart(StartingIn(-kKinetoMaxStartAgeMs - 1), kNow, false);
  EXPECT_EQ(old.outcome, Outcome::kRefused);
  EXPECT_NE(old.reason.find("invalid"), std::string::npos) << old.reason;
}

TEST(KinetoStart, AMovableStartLessThanWarmUpAndMarginAwayMovesThere) {
  for (int64_t ahead : {int64_t{-20'000}, int64_t{-1}, int64_t{0}, kKinetoWarmupMs,
                        kKinetoWarmupMs + kKinetoStartMarginMs - 1}) {
    const KinetoStartDecision d = DecideKinetoStart(StartingIn(ahead), kNow, /*may_move=*/true);
    EXPECT_EQ(d.outcome, Outcome::kMoved) << ahead;
    EXPECT_EQ(d.start_time_unix_ms, kNow + kKinetoWarmupMs + kKinetoStartMarginMs) << ahead;
    EXPECT_FALSE(d.reason.empty());
  }
  const KinetoStartDecision enough =
      DecideKinetoStart(StartingIn(kKinetoWarmupMs + kKinetoStartMarginMs), kNow, true);
  EXPECT_EQ(enough.outcome, Outcome::kAsAsked);
}

TEST(KinetoStart, IterationTracesSnapshotsAndUnsetStartsAreNotChecked) {
  KinetoTraceRequest iterations = StartingIn(-50'000);
  iterations.iterations = 3;
  KinetoTraceRequest snapshot = StartingIn(-50'000);
  snapshot.memory_snapshot = true;
  KinetoTraceRequest unset;
  unset.duration_ms = 500;
  for (const KinetoTraceRequest& request : {iterations, snapshot, unset}) {
    EXPECT_FALSE(HasCheckedStart(request));
    EXPECT_FALSE(LastHandOutMs(request).has_value());
    EXPECT_EQ(DecideKinetoStart(request, kNow, false).outcome, Outcome::kAsAsked);
    EXPECT_EQ(DecideKinetoStart(request, kNow, true).outcome, Outcome::kAsAsked);
  }
}

TEST(KinetoStart, TheLastHandOutIsTheStartLessItsWarmUp) {
  EXPECT_EQ(LastHandOutMs(StartingIn(kKinetoStartLeadMs)), kNow + kKinetoStartLeadMs - kKinetoWarmupMs);
  EXPECT_EQ(LastHandOutMs(StartingIn(9000, 3)), kNow + 6000);
  // The server's lead leaves a full poll interval before that moment.
  EXPECT_GE(kKinetoStartLeadMs - kKinetoWarmupMs, kKinetoPollIntervalMs);
}

}  // namespace
}  // namespace fleetprof
