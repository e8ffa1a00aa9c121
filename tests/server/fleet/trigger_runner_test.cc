// Triggers on simulated time, without binaries (server/fleet/trigger_store.h, trigger_runner.h):
// added, listed and removed (by their creator or an admin), kept in the catalog; a firing starts
// a TRIGGERED capture with the trigger's id and evidence once per cooldown; the sampling budget
// suppresses; `rule` and `regression` triggers fire from the commit hooks; a new agent gets the
// device triggers on connect.

#include <atomic>
#include <chrono>
#include <future>
#include <functional>
#include <memory>
#include <thread>
#include <set>

#include "common/clock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/capture_coordinator.h"
#include "server/fleet/trigger_runner.h"
#include "server/fleet/trigger_store.h"
#include "server/server_metrics.h"
#include "storage/storage.h"
#include "tests/server/fleet/gate.h"

namespace fleetprof {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

// The commit hooks run on the runner's thread: polls `done` (real time, a test's patience).
bool WaitFor(const std::function<bool()>& done) {
  for (int i = 0; i < 1000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

Principal Named(const std::string& name, uint32_t scopes) {
  Principal p;
  p.name = name;
  p.scopes = scopes;
  p.authenticated = true;
  return p;
}

class TriggerRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    storage_ = Storage::InMemory();
    registry_ = std::make_unique<AgentRegistry>(&storage_->agents(), &metrics_, AgentLimits(), &clock_);
    captures_ = std::make_unique<CaptureCoordinator>(storage_.get(), registry_.get(), &metrics_, &clock_);
    store_ = std::make_unique<TriggerStore>(&storage_->triggers(), &clock_,
                                            std::vector<std::string>{"idle_device", "late_rank"});
  }
  void StartRunner(TriggerRunner::Hooks hooks = {}) {
    runner_ = std::make_unique<TriggerRunner>(store_.get(), captures_.get(), registry_.get(), prometheus_.get(),
                                              &clock_, std::move(hooks));
  }
  void TearDown() override {
    runner_.reset();
    store_.reset();
    captures_.reset();
    registry_.reset();
  }
  v1::Trigger Add(const std::string& when, int64_t cooldown_ms = 3000, const std::string& job = "train") {
    v1::AddTriggerRequest request;
    request.set_job(job);
    request.set_when(when);
    request.set_duration_ms(500);
    request.set_cooldown_ms(cooldown_ms);
    auto added = store_->Add(request, Named("alice", 1u << static_cast<int>(Scope::kCapture)));
    EXPECT_TRUE(added.ok()) << added.status();
    return added.ok() ? *added : v1::Trigger();
  }
  v1::Trigger Stored(const std::string& id) {
    auto found = store_->Find(id);
    EXPECT_TRUE(found.ok() && found->has_value());
    return found.ok() && found->has_value() ? **found : v1::Trigger();
  }
  std::vector<v1::Capture> Triggered() {
    v1::ListCapturesRequest request;
    request.set_job("train");
    std::vector<v1::Capture> out;
    auto listed = captures_->List(request);
    EXPECT_TRUE(listed.ok()) << listed.status();
    if (!listed.ok()) return out;
    for (const auto& c : listed->captures()) {
      if (c.reason() == v1::Capture::TRIGGERED) out.push_back(c);
    }
    return out;
  }
  double Counter(const std::string& name, const std::map<std::string, std::string>& labels) {
    for (const auto& family : prometheus_->Collect()) {
      if (family.name != name) continue;
      for (const auto& metric : family.metric) {
        std::map<std::string, std::string> have;
        for (const auto& l : metric.label) have[l.name] = l.value;
        if (have == labels) return metric.counter.value;
      }
    }
    return 0;
  }

  SimulatedClock clock_;
  ServerMetrics metrics_;
  std::shared_ptr<prometheus::Registry> prometheus_ = std::make_shared<prometheus::Registry>();
  std::unique_ptr<Storage> storage_;
  std::unique_ptr<AgentRegistry> registry_;
  std::unique_ptr<CaptureCoordinator> captures_;
  std::unique_ptr<TriggerStore> store_;
  std::unique_ptr<TriggerRunner> runner_;
};

TEST_F(TriggerRunnerTest, AddedTriggersAreListedWithTheirParsedConditionAndDefaults) {
  v1::AddTriggerRequest request;
  request.set_job("train");
  request.set_when("device_utilization < 30% for 5s");
  auto added = store_->Add(request, Named("alice", 1u << static_cast<int>(Scope::kCapture)));
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_EQ(added->duration_ms(), 2000);
  EXPECT_EQ(added->cooldown_ms(), 600'000);
  EXPECT_EQ(added->device().for_ms(), 5000);
  EXPECT_EQ(added->created_by(), "alice");
  clock_.Advance(1);
  Add("rule late_rank", 3000, "other");
  auto all = store_->List(v1::ListTriggersRequest());
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->triggers_size(), 2);
  EXPECT_EQ(all->triggers(0).trigger_id(), added->trigger_id());  // oldest first
  v1::ListTriggersRequest of_other;
  of_other.set_job("other");
  EXPECT_EQ(store_->List(of_other)->triggers(0).rule(), "late_rank");
}

TEST_F(TriggerRunnerTest, ABadConditionIsRefusedShowingTheGrammar) {
  v1::AddTriggerRequest request;
  request.set_job("train");
  request.set_when("device_utilization below 30");
  auto added = store_->Add(request, AnonymousPrincipal());
  ASSERT_EQ(added.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(added.status().message().find("`device_memory > N% for D`"), std::string::npos) << added.status();
  request.set_when("rule nope");
  EXPECT_NE(store_->Add(request, AnonymousPrincipal()).status().message().find("idle_device, late_rank"),
            std::string::npos);
}

TEST_F(TriggerRunnerTest, OnlyTheCreatorOrAnAdminRemovesATrigger) {
  const v1::Trigger t = Add("regression");
  v1::DeleteTriggerRequest request;
  request.set_trigger_id(t.trigger_id());
  auto bob = store_->Delete(request, Named("bob", 1u << static_cast<int>(Scope::kCapture)));
  EXPECT_EQ(bob.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(bob.status().message().find("'alice'"), std::string::npos);
  auto admin = store_->Delete(request, Named("root", 1u << static_cast<int>(Scope::kAdmin)));
  ASSERT_TRUE(admin.ok()) << admin.status();
  EXPECT_TRUE(admin->deleted());
  EXPECT_EQ(store_->Delete(request, AnonymousPrincipal()).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->List(v1::ListTriggersRequest())->triggers_size(), 0);
}

TEST_F(TriggerRunnerTest, AFiringStartsOneTriggeredCapturePerCooldown) {
  StartRunner();
  const v1::Trigger t = Add("device_utilization < 30% for 5s", 3000);
  const std::string evidence = "device 0 utilization 10% < 30% for 5.2 s";
  EXPECT_EQ(runner_->Fire(t.trigger_id(), evidence, 1), TriggerRunner::Outcome::kStarted);
  clock_.Advance(kSecond);
  EXPECT_EQ(runner_->Fire(t.trigger_id(), evidence, 1), TriggerRunner::Outcome::kCooldown);
  clock_.Advance(kSecond);
  EXPECT_EQ(runner_->Fire(t.trigger_id(), evidence, 1), TriggerRunner::Outcome::kCooldown);
  clock_.Advance(kSecond);  // 3 s after the first: the cooldown has passed
  EXPECT_EQ(runner_->Fire(t.trigger_id(), evidence, 1), TriggerRunner::Outcome::kStarted);
  std::vector<v1::Capture> captures = Triggered();
  ASSERT_EQ(captures.size(), 2u);
  for (const v1::Capture& c : captures) {
    EXPECT_EQ(c.trigger_id(), t.trigger_id());
    EXPECT_EQ(c.evidence(), evidence);
    EXPECT_EQ(c.request().duration_ms(), 500);
  }
  const v1::Trigger stored = Stored(t.trigger_id());
  EXPECT_EQ(stored.fired(), 2);
  EXPECT_EQ(stored.suppressed(), 2);
  EXPECT_EQ(stored.last_fired_ns(), clock_.Now());
  EXPECT_EQ(stored.last_evidence(), evidence);
  EXPECT_EQ(stored.last_capture_id(), captures[0].capture_id());  // newest first
  EXPECT_EQ(Counter("fleetprof_trigger_firings_total", {{"kind", "device_utilization"}}), 2);
  EXPECT_EQ(Counter("fleetprof_trigger_suppressed_total", {{"kind", "device_utilization"}, {"reason", "cooldown"}}), 2);
}

// Two replicas (two runners and coordinators on one catalog) that see one condition at once
// start one capture: the cooldown is claimed by compare-and-set.
TEST_F(TriggerRunnerTest, TwoReplicasFiringAtOnceStartOneCapture) {
  StartRunner();
  auto other_captures = std::make_unique<CaptureCoordinator>(storage_.get(), registry_.get(), &metrics_, &clock_);
  auto other_metrics = std::make_shared<prometheus::Registry>();
  TriggerRunner other(store_.get(), other_captures.get(), registry_.get(), other_metrics.get(), &clock_, {});
  const v1::Trigger t = Add("device_utilization < 30% for 5s", 60'000);
  std::atomic<int> started{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      TriggerRunner& runner = i % 2 == 0 ? *runner_ : other;
      for (int n = 0; n < 10; ++n) {
        if (runner.Fire(t.trigger_id(), "device 0 utilization 10% < 30% for 5.0 s", 1) ==
            TriggerRunner::Outcome::kStarted) {
          started.fetch_add(1);
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(started.load(), 1);
  const v1::Trigger stored = Stored(t.trigger_id());
  EXPECT_EQ(stored.fired(), 1);
  EXPECT_EQ(stored.suppressed(), 79);
}

TEST_F(TriggerRunnerTest, TheSamplingBudgetSuppressesAFiringWithoutUsingItsCooldown) {
  bool allow = false;
  int64_t asked = 0;
  TriggerRunner::Hooks hooks;
  hooks.reserve = [&](int64_t device_ns) {
    asked = device_ns;
    return allow;
  };
  StartRunner(hooks);
  const v1::Trigger t = Add("device_memory > 90% for 1s", 3000);
  EXPECT_EQ(runner_->Fire(t.trigger_id(), "device 0 memory 95% > 90% for 1.0 s", 4), TriggerRunner::Outcome::kBudget);
  EXPECT_EQ(asked, 4 * 500 * 1'000'000LL);  // 4 devices x 500 ms
  EXPECT_TRUE(Triggered().empty());
  allow = true;
  EXPECT_EQ(runner_->Fire(t.trigger_id(), "device 0 memory 95% > 90% for 1.0 s", 4), TriggerRunner::Outcome::kStarted);
  EXPECT_EQ(Triggered().size(), 1u);
  EXPECT_EQ(Stored(t.trigger_id()).suppressed(), 1);
  EXPECT_EQ(Counter("fleetprof_trigger_suppressed_total", {{"kind", "device_memory"}, {"reason", "budget"}}), 1);
}

TEST_F(TriggerRunnerTest, ARemovedTriggerNoLongerFires) {
  StartRunner();
  const v1::Trigger t = Add("regression");
  v1::DeleteTriggerRequest request;
  request.set_trigger_id(t.trigger_id());
  ASSERT_TRUE(store_->Delete(request, Named("alice", 0)).ok());
  EXPECT_EQ(runner_->Fire(t.trigger_id(), "x", 1), TriggerRunner::Outcome::kGone);
  EXPECT_TRUE(Triggered().empty());
}

TEST_F(TriggerRunnerTest, ARuleTriggerFiresWhenItsRuleFindsSomethingInTheNewProfile) {
  std::vector<v1::DiagnoseRequest> asked;
  TriggerRunner::Hooks hooks;
  hooks.job_rules = {"late_rank"};
  hooks.diagnose = [&](const v1::DiagnoseRequest& request) -> absl::StatusOr<v1::DiagnoseResponse> {
    asked.push_back(request);
    v1::DiagnoseResponse response;
    v1::Finding* f = response.add_findings();
    f->set_rule("late_rank");
    f->set_summary("rank 2 arrives last at 80% of the collectives");
    f->set_metric(0.8);
    f->set_threshold(0.5);
    return response;
  };
  StartRunner(hooks);
  const v1::Trigger t = Add("rule late_rank", 60'000);
  v1::ProfileInfo info;
  info.set_profile_id("p1");
  info.set_job("train");
  runner_->OnProfileCommitted(info);
  ASSERT_TRUE(WaitFor([&] { return Stored(t.trigger_id()).fired() == 1; }));
  // Cooling down: the next profile is not even diagnosed.
  info.set_profile_id("p2");
  runner_->OnProfileCommitted(info);
  runner_.reset();  // runs what is queued
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].job(), "train");  // a job rule: the job's ranks, not the one profile
  EXPECT_TRUE(asked[0].profile_id().empty());
  ASSERT_EQ(Triggered().size(), 1u);
  EXPECT_NE(Triggered()[0].evidence().find("rank 2 arrives last at 80%"), std::string::npos);
}

// A diagnosis runs every rule: however many rule triggers a job has, a commit diagnoses the
// profile once and the job's ranks once, and each trigger reads its rule's finding from those.
TEST_F(TriggerRunnerTest, ManyRuleTriggersOfAJobShareOneDiagnosisOfEachKind) {
  std::vector<v1::DiagnoseRequest> asked;
  TriggerRunner::Hooks hooks;
  hooks.job_rules = {"late_rank"};
  hooks.diagnose = [&](const v1::DiagnoseRequest& request) -> absl::StatusOr<v1::DiagnoseResponse> {
    asked.push_back(request);
    v1::DiagnoseResponse response;
    if (!request.job().empty()) {  // the job's ranks: late_rank finds something, idle_device nothing
      v1::Finding* f = response.add_findings();
      f->set_rule("late_rank");
      f->set_summary("rank 2 arrives last");
    }
    return response;
  };
  StartRunner(hooks);
  const v1::Trigger late1 = Add("rule late_rank", 60'000);
  const v1::Trigger late2 = Add("rule late_rank", 60'000);
  const v1::Trigger idle1 = Add("rule idle_device", 60'000);
  const v1::Trigger idle2 = Add("rule idle_device", 60'000);
  v1::ProfileInfo info;
  info.set_profile_id("p1");
  info.set_job("train");
  runner_->OnProfileCommitted(info);
  runner_.reset();  // runs what is queued
  ASSERT_EQ(asked.size(), 2u);  // four triggers, two kinds of diagnosis
  EXPECT_NE(asked[0].job().empty(), asked[1].job().empty());
  for (const v1::DiagnoseRequest& request : asked) {
    if (request.job().empty()) {
      EXPECT_EQ(request.profile_id(), "p1");
    }
  }
  EXPECT_EQ(Stored(late1.trigger_id()).fired(), 1);
  EXPECT_EQ(Stored(late2.trigger_id()).fired(), 1);
  EXPECT_EQ(Stored(idle1.trigger_id()).fired(), 0);
  EXPECT_EQ(Stored(idle2.trigger_id()).fired(), 0);
}

TEST_F(TriggerRunnerTest, StopWaitsForTheCheckInProgressDropsTheQueuedOnesAndIgnoresLaterWork) {
  Gate diagnosis;
  std::atomic<int> asked{0};
  TriggerRunner::Hooks hooks;
  hooks.diagnose = [&](const v1::DiagnoseRequest&) -> absl::StatusOr<v1::DiagnoseResponse> {
    ++asked;
    diagnosis.Pass();
    return v1::DiagnoseResponse();  // finds nothing: no capture
  };
  StartRunner(hooks);
  Add("rule idle_device", 60'000);
  v1::ProfileInfo info;
  info.set_job("train");
  diagnosis.HoldNext();
  for (const char* id : {"p1", "p2", "p3"}) {
    info.set_profile_id(id);
    runner_->OnProfileCommitted(info);
  }
  ASSERT_TRUE(diagnosis.WaitUntilHeld()) << "the first commit's check never ran";
  // The check is let go only once Stop is under way (stopping()), so the queued ones must find
  // it stopped whatever the scheduling; and Stop cannot return while the check is held.
  std::atomic<bool> stop_returned{false};
  std::future<void> stopped = std::async(std::launch::async, [&] {
    runner_->Stop();
    stop_returned = true;
  });
  EXPECT_TRUE(WaitFor([&] { return runner_->stopping(); })) << "Stop never began";  // let go either way
  const bool returned_while_held = stop_returned.load();
  diagnosis.Release();
  stopped.get();
  EXPECT_FALSE(returned_while_held) << "Stop returned while a check was still running";
  EXPECT_EQ(asked.load(), 1) << "the two checks queued behind it ran after Stop";

  // After Stop: commits, firings and nudges are ignored, and a second Stop is harmless.
  info.set_profile_id("p4");
  runner_->OnProfileCommitted(info);
  v1::TriggerFiring firing;
  firing.set_trigger_id("any");
  firing.set_job("train");
  runner_->OnAgentFiring("node1", firing);
  runner_->Nudge();
  runner_->Stop();
  runner_.reset();
  EXPECT_EQ(asked.load(), 1);
  EXPECT_TRUE(Triggered().empty());
}

TEST_F(TriggerRunnerTest, ARegressionTriggerFiresOnARecordForItsJobOnly) {
  StartRunner();
  const v1::Trigger t = Add("regression", 60'000);
  v1::Regression r;
  r.set_job("train");
  r.set_profile_id("p9");
  r.set_what("kernel");
  r.set_name("sgemm");
  r.set_baseline_ns(1'000'000);
  r.set_now_ns(1'200'000);
  r.set_change(0.2);
  runner_->OnRegressions("other", {r});
  runner_->OnRegressions("train", {});
  runner_->OnRegressions("train", {r});
  runner_.reset();  // runs what is queued
  ASSERT_EQ(Triggered().size(), 1u);
  EXPECT_EQ(Triggered()[0].evidence(),
            "regression in profile p9 of job train: kernel sgemm 1.200 ms now against a baseline median of 1.000 ms "
            "(+20.0%, 0 profiles)");
  EXPECT_EQ(Stored(t.trigger_id()).fired(), 1);
}

TEST_F(TriggerRunnerTest, AnAgentsFiringCountsOnlyForItsTriggersJobAndNamesTheNode) {
  StartRunner();
  const v1::Trigger device = Add("device_utilization < 30% for 5s", 60'000);
  const v1::Trigger regression = Add("regression", 60'000);
  v1::TriggerFiring firing;
  firing.set_trigger_id(device.trigger_id());
  firing.set_job("other");  // not the trigger's job
  firing.set_evidence("device 0 utilization 10% < 30% for 5.1 s");
  runner_->OnAgentFiring("gpu-1", firing);
  firing.set_trigger_id(regression.trigger_id());  // not a device trigger
  firing.set_job("train");
  runner_->OnAgentFiring("gpu-1", firing);
  firing.set_trigger_id(device.trigger_id());
  firing.set_evidence(std::string("bad\x01evidence"));  // not printable
  runner_->OnAgentFiring("gpu-1", firing);
  firing.set_evidence("device 0 utilization 10% < 30% for 5.1 s");
  runner_->OnAgentFiring("gpu-1", firing);
  runner_.reset();  // runs what is queued
  std::vector<v1::Capture> captures = Triggered();
  ASSERT_EQ(captures.size(), 1u);
  EXPECT_EQ(captures[0].trigger_id(), device.trigger_id());
  EXPECT_EQ(captures[0].evidence(), "device 0 utilization 10% < 30% for 5.1 s on node gpu-1");
  EXPECT_EQ(captures[0].request().node(), "gpu-1") << "a node's firing captures that node's targets only";
  EXPECT_EQ(Stored(regression.trigger_id()).fired(), 0);
}

TEST_F(TriggerRunnerTest, AConnectingAgentGetsTheDeviceTriggers) {
  StartRunner();
  Add("device_utilization < 30% for 5s");
  Add("regression");
  std::vector<v1::ServerMessage> sent;
  absl::Mutex mu;
  v1::AgentHello hello;
  hello.set_node("gpu-1");
  ASSERT_TRUE(registry_
                  ->Connected(
                      hello,
                      [&](const v1::ServerMessage& m) {
                        absl::MutexLock lock(&mu);
                        sent.push_back(m);
                        return true;
                      },
                      [] {})
                  .ok());
  runner_->Refresh(clock_.Now());
  runner_->AgentConnected("gpu-1");
  // The loop's own first refresh may run only now and send to `sent` too: it must be over
  // before `sent` goes (it did not always: a double free).
  runner_.reset();
  absl::MutexLock lock(&mu);
  ASSERT_FALSE(sent.empty());
  const v1::ServerMessage& last = sent.back();
  ASSERT_TRUE(last.has_device_triggers());
  ASSERT_EQ(last.device_triggers().triggers_size(), 1);  // only the device condition
  EXPECT_EQ(last.device_triggers().triggers(0).condition().for_ms(), 5000);
  EXPECT_EQ(last.device_triggers().triggers(0).cooldown_ms(), 3000);
}

}  // namespace
}  // namespace fleetprof
