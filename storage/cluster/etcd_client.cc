#include "storage/cluster/etcd_client.h"

#include <chrono>
#include <optional>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/stopwatch.h"
#include "common/system_time.h"
#include "grpcpp/grpcpp.h"

namespace fleetprof::cluster {
namespace {

// Worth another try on a member: it is down, unreachable, or between leaders.
bool Transient(const grpc::Status& s) {
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE || s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) return true;
  const std::string& m = s.error_message();
  return absl::StrContains(m, "leader changed") || absl::StrContains(m, "no leader") ||
         absl::StrContains(m, "timed out") || absl::StrContains(m, "not capable");
}

// Whether a failed try may still have been applied. A member that said it has no leader (or
// cannot serve), and a connection never made, applied nothing; a timeout, a lost reply or a
// connection broken mid-call may have reached a member that proposed it.
// No connection could be made to the member: nothing is listening there now.
bool ConnectionRefused(const grpc::Status& s) {
  return absl::StrContains(s.error_message(), "failed to connect") ||
         absl::StrContains(s.error_message(), "Connection refused");
}

bool MayHaveBeenApplied(const grpc::Status& s) {
  const std::string& m = s.error_message();
  if (absl::StrContains(m, "no leader") || absl::StrContains(m, "not capable") ||
      absl::StrContains(m, "failed to connect") || absl::StrContains(m, "Connection refused")) {
    return false;
  }
  return s.error_code() == grpc::StatusCode::UNAVAILABLE || s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
         s.error_code() == grpc::StatusCode::CANCELLED || absl::StrContains(m, "timed out") ||
         absl::StrContains(m, "leader changed");
}

absl::Status ToStatus(const grpc::Status& s, std::string_view op) {
  std::string message = absl::StrCat("etcd ", std::string(op), ": ", s.error_message());
  if (absl::StrContains(s.error_message(), "database space exceeded")) return absl::ResourceExhaustedError(message);
  if (absl::StrContains(s.error_message(), "has been compacted")) return absl::OutOfRangeError(message);
  switch (s.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT: return absl::InvalidArgumentError(message);
    case grpc::StatusCode::NOT_FOUND: return absl::NotFoundError(message);
    case grpc::StatusCode::PERMISSION_DENIED: return absl::PermissionDeniedError(message);
    case grpc::StatusCode::UNAUTHENTICATED: return absl::UnauthenticatedError(message);
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return absl::ResourceExhaustedError(message);
    case grpc::StatusCode::OUT_OF_RANGE: return absl::OutOfRangeError(message);
    case grpc::StatusCode::FAILED_PRECONDITION: return absl::FailedPreconditionError(message);
    default: return absl::UnavailableError(message);
  }
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ParseEtcdEndpoints(std::string_view list, bool* tls) {
  std::vector<std::string> out;
  std::optional<bool> secure;
  for (absl::string_view item : absl::StrSplit(absl::string_view(list.data(), list.size()), ',', absl::SkipWhitespace())) {
    item = absl::StripAsciiWhitespace(item);
    const bool https = absl::StartsWith(item, "https://");
    if (!https && !absl::StartsWith(item, "http://")) {
      return absl::InvalidArgumentError(absl::StrCat("--etcd_endpoints ", std::string(item), ": expected http(s)://HOST:PORT"));
    }
    if (secure.has_value() && *secure != https) {
      return absl::InvalidArgumentError(
          "--etcd_endpoints mixes http:// and https://: every member of one cluster is reached the same way");
    }
    secure = https;
    absl::string_view address = item.substr(https ? 8 : 7);
    while (absl::EndsWith(address, "/")) address.remove_suffix(1);
    if (address.empty() || address.find('/') != absl::string_view::npos || address.rfind(':') == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("--etcd_endpoints ", std::string(item), ": expected http(s)://HOST:PORT"));
    }
    out.emplace_back(address);
  }
  if (out.empty()) return absl::InvalidArgumentError("--etcd_endpoints names no endpoint");
  if (tls != nullptr) *tls = secure.value_or(false);
  return out;
}

absl::StatusOr<std::unique_ptr<EtcdClient>> EtcdClient::Connect(EtcdSettings settings) {
  if (settings.endpoints.empty()) return absl::InvalidArgumentError("no etcd endpoint");
  return std::unique_ptr<EtcdClient>(new EtcdClient(std::move(settings)));
}

EtcdClient::EtcdClient(EtcdSettings settings)
    : settings_(std::move(settings)), clock_(settings_.clock != nullptr ? settings_.clock : RealClock()) {
  for (const auto& address : settings_.endpoints) {
    grpc::ChannelArguments args;
    // Etcd's replies (a page of records) stay far below this; gRPC's default is 4 MiB.
    args.SetMaxReceiveMessageSize(64 << 20);
    // Reconnect quickly after a member comes back (gRPC's default backoff grows to 120 s).
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
    // A member that went silent behind a half-open connection (power lost, a partition that
    // drops packets) would hold a watch or a call forever: pings while calls are open find
    // it within keepalive time + timeout, and the call fails over to the next member. etcd
    // refuses pings more often than every 5 s (--grpc-keepalive-min-time); pings go on for as
    // long as a watch stays quiet.
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10'000);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5'000);
    args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
    std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
    if (settings_.tls) {
      grpc::SslCredentialsOptions ssl;
      ssl.pem_root_certs = settings_.ca_pem;
      ssl.pem_cert_chain = settings_.cert_pem;
      ssl.pem_private_key = settings_.key_pem;
      credentials = grpc::SslCredentials(ssl);
    }
    auto channel = grpc::CreateCustomChannel(address, credentials, args);
    members_.push_back({address, etcdserverpb::KV::NewStub(channel), etcdserverpb::Lease::NewStub(channel),
                        etcdserverpb::Watch::NewStub(channel)});
  }
}

std::string EtcdClient::Describe() const {
  std::vector<std::string> urls;
  for (const auto& m : members_) urls.push_back(absl::StrCat(settings_.tls ? "https://" : "http://", m.address));
  return absl::StrJoin(urls, ",");
}

absl::Status EtcdClient::Call(const char* op,
                              const std::function<grpc::Status(grpc::ClientContext*, size_t member)>& call,
                              bool* retried, bool require_leader, absl::Duration budget, bool* maybe_delivered) {
  const Stopwatch took;  // for `on_request`
  const int64_t started = clock_->MonotonicNanos();
  const int64_t give_up =
      started + absl::ToInt64Nanoseconds(budget == absl::ZeroDuration() ? settings_.retry_budget : budget);
  // A member that is there but slow gets longer than one that says it has no leader.
  const int64_t give_up_slow = started + absl::ToInt64Nanoseconds(std::max(settings_.slow_budget, budget));
  thread_local std::mt19937_64 rng{std::random_device{}()};
  grpc::Status last;
  size_t refused_in_a_row = 0;
  for (int attempt = 0;; ++attempt) {
    const size_t member = current_.load() % members_.size();
    grpc::ClientContext context;
    context.set_deadline(DeadlineAfter(*clock_, absl::ToChronoNanoseconds(settings_.call_timeout)));
    // A member that has lost its leader refuses at once instead of waiting out its own timeout.
    if (require_leader) context.AddMetadata("hasleader", "true");
    last = call(&context, member);
    if (maybe_delivered != nullptr && !last.ok() && MayHaveBeenApplied(last)) *maybe_delivered = true;
    if (last.ok() || !Transient(last)) {
      // Only an answer that needed the leader says the cluster is whole: a member cut off from
      // quorum still answers serializable reads (the fallback in Range), and those must not
      // call a cluster without quorum healthy.
      if (require_leader) {
        healthy_ = last.ok() || last.error_code() != grpc::StatusCode::UNAVAILABLE;
      } else if (last.error_code() == grpc::StatusCode::UNAVAILABLE) {
        healthy_ = false;
      }
      if (retried != nullptr) *retried = attempt > 0;
      if (settings_.on_request) {
        settings_.on_request(op, !last.ok() ? "error" : attempt > 0 ? "retried" : "ok", took.ElapsedSeconds());
      }
      return last.ok() ? absl::OkStatus() : ToStatus(last, op);
    }
    // Every member refused a connection in turn: etcd is not there (all stopped, or this host
    // cut off), and waiting out the budget would only delay the error every caller gets.
    refused_in_a_row = ConnectionRefused(last) ? refused_in_a_row + 1 : 0;
    if (refused_in_a_row >= members_.size()) break;
    // This member cannot serve now: the next one, after a pause that grows with each try.
    size_t expected = member;  // unless another call moved on already
    current_.compare_exchange_strong(expected, member + 1);
    const int64_t cap_ms = std::min<int64_t>(1000, int64_t{25} << std::min(attempt, 8));
    const int64_t pause_ns = std::uniform_int_distribution<int64_t>(cap_ms / 4, cap_ms)(rng) * 1'000'000;
    // etcd's own "request timed out" (after a leader change, most often) comes as UNAVAILABLE,
    // but the member answered: it is slow, not gone, and such a try can outlast the short budget.
    const bool slow = last.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
                      absl::StrContains(last.error_message(), "timed out");
    const int64_t resume = clock_->MonotonicNanos() + pause_ns;
    if (resume >= (slow ? give_up_slow : give_up)) break;
    SleepUntil(*clock_, resume);
  }
  healthy_ = false;
  if (retried != nullptr) *retried = true;
  if (settings_.on_request) {
    settings_.on_request(op, "error", took.ElapsedSeconds());
  }
  return absl::UnavailableError(absl::StrCat("etcd (", Describe(), ") unavailable for ", op, ": ", last.error_message()));
}

std::unique_ptr<grpc::ClientReaderWriter<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse>>
EtcdClient::OpenWatch(grpc::ClientContext* context) {
  // etcd refuses watches on a member cut off from the leader only with this metadata; without
  // it a partitioned member's watch would stay silent instead of failing over.
  context->AddMetadata("hasleader", "true");
  return members_[current_.load() % members_.size()].watch->Watch(context);
}

absl::StatusOr<etcdserverpb::RangeResponse> EtcdClient::RangeOn(const char* op, const etcdserverpb::RangeRequest& request,
                                                               absl::Duration budget) {
  etcdserverpb::RangeResponse response;
  absl::Status s = Call(
      op,
      [&](grpc::ClientContext* context, size_t member) {
        response.Clear();
        return members_[member].kv->Range(context, request, &response);
      },
      nullptr, !request.serializable(), budget);
  if (!s.ok()) return s;
  return response;
}

absl::StatusOr<etcdserverpb::RangeResponse> EtcdClient::Range(const etcdserverpb::RangeRequest& request) {
  auto answered = RangeOn("range", request, std::min(settings_.retry_budget, absl::Milliseconds(1500)));
  if (answered.ok() || !absl::IsUnavailable(answered.status()) || request.serializable()) return answered;
  // No quorum: what a live member has is still every committed record up to its last apply.
  etcdserverpb::RangeRequest local = request;
  local.set_serializable(true);
  auto fallback = RangeOn("range_serializable", local, absl::ZeroDuration());
  if (!fallback.ok()) return answered.status();
  return fallback;
}

absl::StatusOr<etcdserverpb::RangeResponse> EtcdClient::RangeFromQuorum(const etcdserverpb::RangeRequest& request) {
  etcdserverpb::RangeRequest linearizable = request;
  linearizable.set_serializable(false);
  return RangeOn("range", linearizable, std::min(settings_.retry_budget, absl::Milliseconds(1500)));
}

absl::StatusOr<etcdserverpb::TxnResponse> EtcdClient::Txn(const etcdserverpb::TxnRequest& request, bool* retried,
                                                         bool* maybe_applied) {
  etcdserverpb::TxnResponse response;
  bool delivered = false;
  absl::Status s = Call("txn", [&](grpc::ClientContext* context, size_t member) {
    response.Clear();
    return members_[member].kv->Txn(context, request, &response);
  }, retried, true, absl::ZeroDuration(), &delivered);
  if (maybe_applied != nullptr) *maybe_applied = !s.ok() && delivered;
  if (!s.ok()) return s;
  return response;
}

absl::Status EtcdClient::Compact(int64_t revision) {
  etcdserverpb::CompactionRequest request;
  request.set_revision(revision);
  etcdserverpb::CompactionResponse response;
  return Call("compact", [&](grpc::ClientContext* context, size_t member) {
    return members_[member].kv->Compact(context, request, &response);
  });
}

absl::StatusOr<etcdserverpb::LeaseGrantResponse> EtcdClient::LeaseGrant(int64_t ttl_seconds) {
  etcdserverpb::LeaseGrantRequest request;
  request.set_ttl(ttl_seconds);
  etcdserverpb::LeaseGrantResponse response;
  absl::Status s = Call("lease_grant", [&](grpc::ClientContext* context, size_t member) {
    response.Clear();
    return members_[member].lease->LeaseGrant(context, request, &response);
  });
  if (!s.ok()) return s;
  if (!response.error().empty()) return absl::UnavailableError(absl::StrCat("etcd lease_grant: ", response.error()));
  return response;
}

absl::Status EtcdClient::LeaseRevoke(int64_t id) {
  etcdserverpb::LeaseRevokeRequest request;
  request.set_id(id);
  etcdserverpb::LeaseRevokeResponse response;
  return Call("lease_revoke", [&](grpc::ClientContext* context, size_t member) {
    return members_[member].lease->LeaseRevoke(context, request, &response);
  });
}

absl::StatusOr<int64_t> EtcdClient::LeaseKeepAliveOnce(int64_t id) {
  etcdserverpb::LeaseKeepAliveResponse response;
  absl::Status s = Call("lease_keepalive", [&](grpc::ClientContext* context, size_t member) {
    auto stream = members_[member].lease->LeaseKeepAlive(context);
    etcdserverpb::LeaseKeepAliveRequest request;
    request.set_id(id);
    if (!stream->Write(request) || !stream->Read(&response)) {
      stream->WritesDone();
      grpc::Status finished = stream->Finish();
      return finished.ok() ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "keep-alive stream closed") : finished;
    }
    stream->WritesDone();
    context->TryCancel();
    (void)stream->Finish();
    return grpc::Status::OK;
  });
  if (!s.ok()) return s;
  return response.ttl();
}

}  // namespace fleetprof::cluster
