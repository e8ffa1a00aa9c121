#include "server/http_api.h"

#include <memory>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "httplib.h"
#include "common/safe_paths.h"
#include "proto/proto_json.h"
#include "server/http_status.h"

namespace fleetprof {
namespace {

constexpr char kJson[] = "application/json";

void SendError(httplib::Response& res, const absl::Status& status) {
  res.status = HttpStatusFor(status.code());
  res.set_content(HttpErrorJson(status), kJson);
}

template <typename T>
void Send(httplib::Response& res, const absl::StatusOr<T>& result) {
  if (!result.ok()) return SendError(res, result.status());
  res.status = 200;
  res.body = ProtoToJson(*result);  // moved in: set_content() would copy a whole summary
  res.set_header("Content-Type", kJson);
}

// The query parameters of one request, checked against the names its route accepts, so a
// typo is a 400 naming it rather than a filter silently ignored.
class QueryParams {
 public:
  QueryParams(const httplib::Request& req, std::set<std::string> allowed) : req_(req) {
    for (const auto& [name, value] : req.params) {
      if (!allowed.count(name) && status_.ok()) {
        status_ = absl::InvalidArgumentError(
            absl::StrCat("unknown query parameter '", name, "' (this route takes: ",
                         allowed.empty() ? "none" : absl::StrJoin(allowed, ", "), ")"));
      }
    }
  }
  std::string String(const std::string& name) const {
    return req_.has_param(name) ? req_.get_param_value(name) : "";
  }
  // An integer parameter, `fallback` when absent; a malformed one makes status() fail.
  int64_t Int(const std::string& name, int64_t fallback = 0) {
    if (!req_.has_param(name)) return fallback;
    int64_t value = 0;
    const std::string text = req_.get_param_value(name);
    if (!absl::SimpleAtoi(text, &value) && status_.ok()) {
      status_ = absl::InvalidArgumentError(
          absl::StrCat("query parameter '", name, "' must be an integer, not '", text, "'"));
    }
    return value;
  }
  // The same for an int32 request field: out of range also fails.
  int32_t Int32(const std::string& name) {
    const int64_t value = Int(name);
    if ((value < INT32_MIN || value > INT32_MAX) && status_.ok()) {
      status_ = absl::InvalidArgumentError(absl::StrCat("query parameter '", name, "' is out of range"));
    }
    return static_cast<int32_t>(value);
  }
  // A flag: absent, "0" or "false" is false; "1" or "true" true; anything else fails.
  bool Bool(const std::string& name) {
    const std::string text = String(name);
    if (text.empty() || text == "0" || text == "false") return false;
    if (text == "1" || text == "true") return true;
    if (status_.ok()) {
      status_ = absl::InvalidArgumentError(absl::StrCat("query parameter '", name, "' must be 0/1 or true/false"));
    }
    return false;
  }
  // Every occurrence of `name`.
  std::vector<std::string> All(const std::string& name) const {
    std::vector<std::string> values;
    for (size_t i = 0; i < req_.get_param_value_count(name); ++i) values.push_back(req_.get_param_value(name, i));
    return values;
  }
  // Every `name=k=v` occurrence as a key/value pair. Read from the raw query: httplib keeps
  // only the text after the last '=' of an unencoded `label=k=v`.
  std::map<std::string, std::string> Labels(const std::string& name) {
    std::map<std::string, std::string> labels;
    for (const std::string& text : RawValues(name)) {
      const size_t eq = text.find('=');
      if ((eq == std::string::npos || eq == 0) && status_.ok()) {
        status_ = absl::InvalidArgumentError(
            absl::StrCat("query parameter '", name, "' must be key=value, not '", text, "'"));
        continue;
      }
      labels[text.substr(0, eq)] = text.substr(eq + 1);
    }
    return labels;
  }
  const absl::Status& status() const { return status_; }

 private:
  // The decoded values of `name` in the query, each split at its first '=' only.
  std::vector<std::string> RawValues(const std::string& name) const {
    std::vector<std::string> values;
    const size_t q = req_.target.find('?');
    if (q == std::string::npos) return values;
    for (absl::string_view piece : absl::StrSplit(absl::string_view(req_.target).substr(q + 1), '&')) {
      const size_t eq = piece.find('=');
      const std::string key = httplib::detail::decode_url(std::string(piece.substr(0, eq)), true);
      if (key != name) continue;
      values.push_back(eq == absl::string_view::npos
                           ? ""
                           : httplib::detail::decode_url(std::string(piece.substr(eq + 1)), true));
    }
    return values;
  }

  const httplib::Request& req_;
  absl::Status status_;
};

void ListProfiles(const HttpApiBackends& b, const httplib::Request& req, httplib::Response& res) {
  QueryParams params(req, {"job", "label", "since_ns", "until_ns", "page_size", "page_token"});
  v1::ListProfilesRequest request;
  request.set_job(params.String("job"));
  for (const auto& [key, value] : params.Labels("label")) (*request.mutable_labels())[key] = value;
  request.set_start_after_ns(params.Int("since_ns"));
  request.set_end_before_ns(params.Int("until_ns"));
  request.set_page_size(params.Int32("page_size"));
  request.set_page_token(params.String("page_token"));
  if (!params.status().ok()) return SendError(res, params.status());
  Send(res, b.query->ListProfiles(request));
}

void ProfileSection(const HttpApiBackends& b, const httplib::Request& req, httplib::Response& res) {
  QueryParams params(req, {"limit"});
  v1::BreakdownRequest request;
  request.set_profile_id(req.matches[1]);
  request.set_limit(params.Int32("limit"));
  if (!params.status().ok()) return SendError(res, params.status());
  const std::string section = req.matches[2];
  if (section == "ops") return Send(res, b.query->Ops(request));
  if (section == "kernels") return Send(res, b.query->Kernels(request));
  if (section == "devices") return Send(res, b.query->Devices(request));
  if (section == "steps") return Send(res, b.query->Steps(request));
  if (section == "memory") return Send(res, b.query->Memory(request));
  if (section == "xla_ops") return Send(res, b.query->XlaOps(request));
  SendError(res, absl::NotFoundError(absl::StrCat(
                     "no section '", section, "' (want ops, kernels, devices, steps, memory or xla_ops)")));
}

void TraceWindow(const HttpApiBackends& b, const httplib::Request& req, httplib::Response& res) {
  QueryParams params(req, {"start_ns", "end_ns", "resolution_ns", "track", "search", "args", "correlation",
                           "max_events_per_track"});
  v1::TraceWindowRequest request;
  request.set_profile_id(req.matches[1]);
  request.set_start_ns(params.Int("start_ns"));
  request.set_end_ns(params.Int("end_ns"));
  request.set_resolution_ns(params.Int("resolution_ns"));
  for (std::string& track : params.All("track")) request.add_tracks(std::move(track));
  request.set_search(params.String("search"));
  request.set_args(params.Bool("args"));
  if (req.has_param("correlation")) request.set_correlation(params.Int("correlation"));
  request.set_max_events_per_track(params.Int32("max_events_per_track"));
  if (!params.status().ok()) return SendError(res, params.status());
  Send(res, b.query->TraceWindow(request));
}

void RangeBreakdown(const HttpApiBackends& b, const httplib::Request& req, httplib::Response& res) {
  QueryParams params(req, {"start_ns", "end_ns", "limit"});
  v1::RangeBreakdownRequest request;
  request.set_profile_id(req.matches[1]);
  request.set_start_ns(params.Int("start_ns"));
  request.set_end_ns(params.Int("end_ns"));
  request.set_limit(params.Int32("limit"));
  if (!params.status().ok()) return SendError(res, params.status());
  Send(res, b.query->RangeBreakdown(request));
}

void Diff(const HttpApiBackends& b, const httplib::Request& req, httplib::Response& res) {
  QueryParams params(req, {"base", "profile", "by", "limit"});
  v1::DiffRequest request;
  const std::string base = params.String("base");
  if (base.empty()) return SendError(res, absl::InvalidArgumentError("query parameter 'base' (the baseline profile) is required"));
  request.add_profile_ids(base);
  for (std::string& id : params.All("profile")) request.add_profile_ids(std::move(id));
  request.set_by(params.String("by"));
  request.set_limit(params.Int32("limit"));
  if (!params.status().ok()) return SendError(res, params.status());
  Send(res, b.query->Diff(request));
}

// The filters of a job view: labels and a time range.
v1::JobRequest JobFilter(const httplib::Request& req, QueryParams& params) {
  v1::JobRequest request;
  request.set_job(req.matches[1]);
  for (const auto& [key, value] : params.Labels("label")) (*request.mutable_labels())[key] = value;
  request.set_since_ns(params.Int("since_ns"));
  request.set_until_ns(params.Int("until_ns"));
  return request;
}

void JobView(const HttpApiBackends& b, const httplib::Request& req, httplib::Response& res) {
  QueryParams params(req, {"label", "since_ns", "until_ns"});
  const v1::JobRequest request = JobFilter(req, params);
  if (!params.status().ok()) return SendError(res, params.status());
  if (req.matches[2] == "ops") return Send(res, b.query->JobOps(request));
  Send(res, b.query->JobSeries(request));
}

// `threshold=RULE=VALUE`, repeatable.
absl::Status ReadThresholds(QueryParams& params, v1::DiagnoseRequest* request) {
  for (const auto& [rule, text] : params.Labels("threshold")) {
    double value = 0;
    if (!absl::SimpleAtod(text, &value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("threshold of ", rule, " must be a number, not '", text, "'"));
    }
    (*request->mutable_thresholds())[rule] = value;
  }
  return params.status();
}

void ProfileDiagnosis(const HttpApiBackends& b, const httplib::Request& req, httplib::Response& res) {
  QueryParams params(req, {"threshold"});
  v1::DiagnoseRequest request;
  request.set_profile_id(req.matches[1]);
  if (absl::Status s = ReadThresholds(params, &request); !s.ok()) return SendError(res, s);
  Send(res, b.query->Diagnose(request));
}

void JobDiagnosis(const HttpApiBackends& b, const httplib::Request& req, httplib::Response& res) {
  QueryParams params(req, {"label", "since_ns", "until_ns", "threshold"});
  const v1::JobRequest filter = JobFilter(req, params);
  v1::DiagnoseRequest request;
  request.set_job(filter.job());
  *request.mutable_labels() = filter.labels();
  request.set_since_ns(filter.since_ns());
  request.set_until_ns(filter.until_ns());
  if (absl::Status s = ReadThresholds(params, &request); !s.ok()) return SendError(res, s);
  Send(res, b.query->Diagnose(request));
}

// The profile as a file download, streamed in 1 MiB pieces as it is read or produced.
void ExportProfile(const HttpApiBackends& b, const httplib::Request& req, httplib::Response& res) {
  QueryParams params(req, {"format", "start_ns", "end_ns"});
  v1::ExportProfileRequest request;
  request.set_profile_id(req.matches[1]);
  request.set_format(params.String("format"));
  request.set_start_ns(params.Int("start_ns"));
  request.set_end_ns(params.Int("end_ns"));
  if (!params.status().ok()) return SendError(res, params.status());
  auto exported = b.query->ExportProfile(request);
  if (!exported.ok()) return SendError(res, exported.status());
  const bool chrome = request.format() == "chrome_json";
  // The name came with the upload: only safe characters reach the header.
  const std::string name =
      chrome ? absl::StrCat(exported->profile.profile_id(), ".trace.json")
             : SafeFileName(exported->profile.file_name().empty() ? exported->profile.profile_id()
                                                                  : exported->profile.file_name());
  res.set_header("Content-Disposition", absl::StrCat("attachment; filename=\"", name, "\""));
  std::shared_ptr<analysis::ByteSource> source = std::move(exported->bytes);
  auto buffer = std::make_shared<std::string>(1 << 20, '\0');
  res.set_chunked_content_provider(chrome ? kJson : "application/octet-stream",
                                   [source, buffer](size_t, httplib::DataSink& sink) {
                                     auto n = source->Read(buffer->data(), buffer->size());
                                     if (!n.ok()) return false;  // the connection is cut: never a short file that looks whole
                                     if (*n == 0) {
                                       sink.done();
                                       return true;
                                     }
                                     return sink.write(buffer->data(), *n);
                                   });
}

void StartCapture(const HttpApiBackends& b, const httplib::Request& req, httplib::Response& res) {
  QueryParams params(req, {});
  if (!params.status().ok()) return SendError(res, params.status());
  v1::StartCaptureRequest request;
  if (absl::Status s = ProtoFromJson(req.body.empty() ? "{}" : req.body, &request); !s.ok()) {
    return SendError(res, s);
  }
  Send(res, b.captures->Start(request));
}

// A route that takes no query parameters.
template <typename F>
httplib::Server::Handler Plain(F answer) {
  return [answer](const httplib::Request& req, httplib::Response& res) {
    QueryParams params(req, {});
    if (!params.status().ok()) return SendError(res, params.status());
    answer(req, res);
  };
}

}  // namespace

void RegisterHttpApi(HttpServer& server, const HttpApiBackends& backends) {
  httplib::Server& routes = server.routes();
  const HttpApiBackends b = backends;
  routes.Get("/healthz", [b](const httplib::Request&, httplib::Response& res) {
    const std::string reason = b.not_serving ? b.not_serving() : "";
    res.status = reason.empty() ? 200 : 503;
    res.set_content(reason.empty() ? "ok\n" : reason + "\n", "text/plain");
  });
  routes.Get("/metrics", [b](const httplib::Request&, httplib::Response& res) {
    res.set_content(b.metrics_text(), "text/plain; version=0.0.4; charset=utf-8");
  });
  routes.Get("/api/v1/profiles", [b](const httplib::Request& req, httplib::Response& res) {
    ListProfiles(b, req, res);
  });
  routes.Get(R"(/api/v1/profiles/([^/]+))", Plain([b](const httplib::Request& req, httplib::Response& res) {
               Send(res, b.query->GetProfile(req.matches[1]));
             }));
  routes.Delete(R"(/api/v1/profiles/([^/]+))", Plain([b](const httplib::Request& req, httplib::Response& res) {
                  v1::DeleteProfileRequest request;
                  request.set_profile_id(req.matches[1]);
                  Send(res, b.query->DeleteProfile(request));
                }));
  routes.Get(R"(/api/v1/profiles/([^/]+)/trace)",
             [b](const httplib::Request& req, httplib::Response& res) { TraceWindow(b, req, res); });
  routes.Get(R"(/api/v1/profiles/([^/]+)/range)",
             [b](const httplib::Request& req, httplib::Response& res) { RangeBreakdown(b, req, res); });
  routes.Get(R"(/api/v1/profiles/([^/]+)/export)",
             [b](const httplib::Request& req, httplib::Response& res) { ExportProfile(b, req, res); });
  routes.Get(R"(/api/v1/profiles/([^/]+)/diagnosis)",
             [b](const httplib::Request& req, httplib::Response& res) { ProfileDiagnosis(b, req, res); });
  routes.Get("/api/v1/diff", [b](const httplib::Request& req, httplib::Response& res) { Diff(b, req, res); });
  routes.Get(R"(/api/v1/jobs/([^/]+)/(ops|series))",
             [b](const httplib::Request& req, httplib::Response& res) { JobView(b, req, res); });
  routes.Get(R"(/api/v1/jobs/([^/]+)/diagnosis)",
             [b](const httplib::Request& req, httplib::Response& res) { JobDiagnosis(b, req, res); });
  routes.Get(R"(/api/v1/profiles/([^/]+)/([^/]+))",
             [b](const httplib::Request& req, httplib::Response& res) { ProfileSection(b, req, res); });
  routes.Get("/api/v1/agents", Plain([b](const httplib::Request&, httplib::Response& res) {
               Send(res, absl::StatusOr<v1::ListAgentsResponse>(b.agents->ListAgents()));
             }));
  routes.Get("/api/v1/captures", [b](const httplib::Request& req, httplib::Response& res) {
    QueryParams params(req, {"job", "limit"});
    v1::ListCapturesRequest request;
    request.set_job(params.String("job"));
    request.set_limit(params.Int32("limit"));
    if (!params.status().ok()) return SendError(res, params.status());
    Send(res, b.captures->List(request));
  });
  routes.Get(R"(/api/v1/captures/([^/]+))", Plain([b](const httplib::Request& req, httplib::Response& res) {
               Send(res, b.captures->Get(req.matches[1]));
             }));
  routes.Post("/api/v1/captures",
              [b](const httplib::Request& req, httplib::Response& res) { StartCapture(b, req, res); });
  routes.Get("/api/v1/schedules", [b](const httplib::Request& req, httplib::Response& res) {
    QueryParams params(req, {"job"});
    v1::ListSchedulesRequest request;
    request.set_job(params.String("job"));
    if (!params.status().ok()) return SendError(res, params.status());
    Send(res, b.schedules->List(request));
  });
  routes.Post("/api/v1/schedules", Plain([b](const httplib::Request& req, httplib::Response& res) {
                v1::CreateScheduleRequest request;
                if (absl::Status s = ProtoFromJson(req.body.empty() ? "{}" : req.body, &request); !s.ok()) {
                  return SendError(res, s);
                }
                Send(res, b.schedules->Create(request));
              }));
  routes.Delete(R"(/api/v1/schedules/([^/]+))", Plain([b](const httplib::Request& req, httplib::Response& res) {
                  v1::DeleteScheduleRequest request;
                  request.set_schedule_id(req.matches[1]);
                  Send(res, b.schedules->Delete(request));
                }));
}

}  // namespace fleetprof
