#include "storage/cluster/s3_client.h"

#include <curl/curl.h>
#include <openssl/evp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/call_bounds.h"
#include "common/stopwatch.h"
#include "storage/cluster/s3_xml.h"

namespace fleetprof::cluster {
namespace {

// A reply body larger than this is refused (listings are ~250 bytes a key, 1,000 keys a page).
constexpr size_t kMaxControlReplyBytes = 4 << 20;

std::string Sha256Hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(length * 2);
  for (unsigned int i = 0; i < length; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 15]);
  }
  return out;
}

// SigV4's URI encoding of a query value: unreserved characters as they are, the rest %XX.
std::string QueryEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

struct Request {
  const char* op;           // for metrics and messages: GET, PUT, HEAD, DELETE, LIST, …
  const char* method;       // the HTTP method
  std::string key;          // under the prefix; empty: the bucket itself
  std::string query;        // already in SigV4's order (sorted by name) and encoded
  std::string_view body;
  std::optional<ByteRange> range;
  const char* content_type = nullptr;
  size_t max_reply_bytes = kMaxControlReplyBytes;
};

struct Reply {
  long status = 0;
  std::string body;
  std::string etag;
  int64_t content_length = -1;
};

struct Transfer {
  std::string_view body;    // the whole request body
  std::string_view upload;  // what is left of it to send
  Reply* reply;
  size_t max_reply_bytes;
  bool overflow = false;
};

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t bytes = size * n;
  if (t->reply->body.size() + bytes > t->max_reply_bytes) {
    t->overflow = true;
    return 0;  // curl stops with CURLE_WRITE_ERROR
  }
  t->reply->body.append(data, bytes);
  return bytes;
}

size_t OnUpload(char* buffer, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t take = std::min(size * n, t->upload.size());
  std::memcpy(buffer, t->upload.data(), take);
  t->upload.remove_prefix(take);
  return take;
}

// curl rewinds the body when it resends a request on a fresh connection (the reused one was
// closed under it).
int OnSeek(void* user, curl_off_t offset, int origin) {
  auto* t = static_cast<Transfer*>(user);
  if (origin != SEEK_SET || offset < 0 || static_cast<size_t>(offset) > t->body.size()) return CURL_SEEKFUNC_FAIL;
  t->upload = t->body.substr(static_cast<size_t>(offset));
  return CURL_SEEKFUNC_OK;
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  absl::string_view line(data, size * n);
  const size_t colon = line.find(':');
  if (colon != absl::string_view::npos) {
    absl::string_view name = line.substr(0, colon);
    absl::string_view value = absl::StripAsciiWhitespace(line.substr(colon + 1));
    if (absl::EqualsIgnoreCase(name, "etag")) t->reply->etag = std::string(value);
    if (absl::EqualsIgnoreCase(name, "content-length")) {
      int64_t length = -1;
      if (absl::SimpleAtoi(value, &length)) t->reply->content_length = length;
    }
  }
  return size * n;
}

bool RetryableCurl(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

bool RetryableStatus(long status, std::string_view body) {
  return status >= 500 || status == 429 || (status == 400 && body.find("<Code>RequestTimeout</Code>") != std::string_view::npos);
}

class S3Client;

// A multipart upload fed part by part; below one part it is a single PUT at Finish.
class S3Writer : public ObjectWriter {
 public:
  S3Writer(S3Client* client, std::string key) : client_(client), key_(std::move(key)) {}
  ~S3Writer() override;
  absl::Status Append(std::string_view bytes) override;
  absl::Status Finish() override;

 private:
  absl::Status SendPart();

  S3Client* client_;
  std::string key_;
  std::string buffer_;
  std::string upload_id_;
  std::vector<std::string> etags_;
  bool finished_ = false;
};

class S3Client : public ObjectClient {
 public:
  S3Client(S3Location where, S3Settings settings, S3TestHooks hooks)
      : where_(std::move(where)), settings_(std::move(settings)), hooks_(std::move(hooks)),
        sigv4_(absl::StrCat("aws:amz:", settings_.region, ":s3")) {}
  ~S3Client() override {
    absl::MutexLock lock(&mu_);
    for (CURL* handle : idle_) curl_easy_cleanup(handle);
  }

  std::string Describe() const override { return absl::StrCat("s3://", where_.bucket, "/", where_.prefix); }
  bool healthy() const override { return healthy_.load(); }

  absl::Status Put(std::string_view key, std::string_view bytes) override {
    auto reply = Do({.op = "PUT", .method = "PUT", .key = std::string(key), .body = bytes});
    return Check(reply, "PUT", key);
  }

  absl::StatusOr<std::string> Get(std::string_view key, std::optional<ByteRange> range) override {
    if (range && range->length <= 0) return std::string();
    auto reply = Do({.op = "GET", .method = "GET", .key = std::string(key), .range = range,
                     .max_reply_bytes = range ? static_cast<size_t>(range->length) : size_t{1} << 30});
    if (absl::Status s = Check(reply, "GET", key); !s.ok()) {
      // A range that starts at or past the end: S3 says 416; the contract says "cut".
      if (reply.ok() && reply->status == 416) return std::string();
      return s;
    }
    return std::move(reply->body);
  }

  absl::StatusOr<int64_t> Size(std::string_view key) override {
    auto reply = Do({.op = "HEAD", .method = "HEAD", .key = std::string(key)});
    if (absl::Status s = Check(reply, "HEAD", key); !s.ok()) return s;
    if (reply->content_length < 0) return absl::DataLossError(absl::StrCat("s3 HEAD ", Where(key), ": no Content-Length"));
    return reply->content_length;
  }

  absl::Status Delete(std::string_view key) override {
    auto reply = Do({.op = "DELETE", .method = "DELETE", .key = std::string(key)});
    if (reply.ok() && reply->status == 404) return absl::OkStatus();
    return Check(reply, "DELETE", key);
  }

  absl::Status List(std::string_view prefix, const ObjectVisitor& visit) override {
    std::string token;
    while (true) {
      std::string query = token.empty() ? "" : absl::StrCat("continuation-token=", QueryEncode(token), "&");
      absl::StrAppend(&query, "list-type=2&prefix=", QueryEncode(absl::StrCat(where_.prefix, std::string(prefix))));
      auto reply = Do({.op = "LIST", .method = "GET", .query = std::move(query)});
      if (absl::Status s = Check(reply, "LIST", prefix); !s.ok()) return s;
      auto page = ParseListPage(reply->body);
      if (!page.ok()) return absl::DataLossError(absl::StrCat("s3 LIST ", Where(prefix), ": ", page.status().message()));
      for (const auto& entry : page->entries) {
        if (!entry.key.starts_with(where_.prefix)) continue;
        if (!visit(std::string_view(entry.key).substr(where_.prefix.size()), entry.size)) return absl::OkStatus();
      }
      if (!page->truncated) return absl::OkStatus();
      if (page->next_token.empty()) return absl::DataLossError(absl::StrCat("s3 LIST ", Where(prefix), ": truncated page without a continuation token"));
      token = std::move(page->next_token);
    }
  }

  absl::StatusOr<std::unique_ptr<ObjectWriter>> NewWriter(std::string_view key) override {
    return std::unique_ptr<ObjectWriter>(new S3Writer(this, std::string(key)));
  }

  // Multipart upload steps, for S3Writer.
  absl::StatusOr<std::string> CreateMultipart(const std::string& key) {
    auto reply = Do({.op = "CREATE_MULTIPART", .method = "POST", .key = key, .query = "uploads="});
    if (absl::Status s = Check(reply, "CREATE_MULTIPART", key); !s.ok()) return s;
    std::string id = XmlText(reply->body, "UploadId");
    if (id.empty()) return absl::DataLossError(absl::StrCat("s3 CREATE_MULTIPART ", Where(key), ": no UploadId in the reply"));
    return id;
  }
  absl::StatusOr<std::string> UploadPart(const std::string& key, const std::string& upload_id, int number,
                                         std::string_view bytes) {
    auto reply = Do({.op = "UPLOAD_PART", .method = "PUT", .key = key,
                     .query = absl::StrCat("partNumber=", number, "&uploadId=", QueryEncode(upload_id)), .body = bytes});
    if (absl::Status s = Check(reply, "UPLOAD_PART", key); !s.ok()) return s;
    if (reply->etag.empty()) return absl::DataLossError(absl::StrCat("s3 UPLOAD_PART ", Where(key), ": no ETag"));
    return reply->etag;
  }
  absl::Status CompleteMultipart(const std::string& key, const std::string& upload_id,
                                 const std::vector<std::string>& etags) {
    std::string body = "<CompleteMultipartUpload>";
    for (size_t i = 0; i < etags.size(); ++i) {
      absl::StrAppend(&body, "<Part><PartNumber>", i + 1, "</PartNumber><ETag>", XmlEscape(etags[i]), "</ETag></Part>");
    }
    body += "</CompleteMultipartUpload>";
    auto reply = Do({.op = "COMPLETE_MULTIPART", .method = "POST", .key = key,
                     .query = absl::StrCat("uploadId=", QueryEncode(upload_id)), .body = body,
                     .content_type = "application/xml"});
    if (absl::Status s = Check(reply, "COMPLETE_MULTIPART", key); !s.ok()) return s;
    // S3 may answer 200 and put the error in the body when completing fails late.
    if (reply->body.find("<Error>") != std::string::npos) {
      return absl::UnavailableError(absl::StrCat("s3 COMPLETE_MULTIPART ", Where(key), ": ", XmlText(reply->body, "Code"),
                                                 " ", XmlText(reply->body, "Message")));
    }
    return absl::OkStatus();
  }
  void AbortMultipart(const std::string& key, const std::string& upload_id) {
    (void)Do({.op = "ABORT_MULTIPART", .method = "DELETE", .key = key,
              .query = absl::StrCat("uploadId=", QueryEncode(upload_id))});
  }
  int64_t part_bytes() const { return std::max<int64_t>(settings_.part_bytes, 5 << 20); }

 private:
  std::string Where(std::string_view key) const { return absl::StrCat(where_.bucket, "/", where_.prefix, std::string(key)); }

  std::string Url(const Request& r) const {
    std::string url;
    if (!hooks_.bucket_url.empty()) {
      url = hooks_.bucket_url + "/";
    } else if (!settings_.endpoint.empty()) {
      url = absl::StrCat(settings_.endpoint, "/", where_.bucket, "/");
    } else {
      url = absl::StrCat("https://", where_.bucket, ".s3.", settings_.region, ".amazonaws.com/");
    }
    if (!r.key.empty()) absl::StrAppend(&url, where_.prefix, r.key);
    if (!r.query.empty()) absl::StrAppend(&url, "?", r.query);
    return url;
  }

  // One request, retried; an HTTP answer that is not worth retrying is returned as it is.
  absl::StatusOr<Reply> Do(const Request& r) {
    const Stopwatch started;
    const std::string payload_hash = Sha256Hex(r.body);
    absl::Status last;
    bool retried = false;
    for (int attempt = 0; attempt < std::max(1, settings_.max_attempts); ++attempt) {
      if (attempt > 0) {
        retried = true;
        Backoff(attempt, Bounded(r));
      }
      // A query's caller that stopped waiting (or went away) ends the tries: the request
      // would only hold a query worker for an answer nobody reads.
      if (Bounded(r) && CallTimeLeftNanos() <= 0) return CallerGone(r, attempt, last, started);
      Reply reply;
      const Stopwatch attempt_started;
      CURLcode code = Perform(r, payload_hash, &reply, &last);
      if (code == CURLE_OK && !RetryableStatus(reply.status, reply.body)) {
        healthy_ = true;
        Observe(r.op, reply.status == 404 ? "not_found" : reply.status < 300 ? (retried ? "retried" : "ok") : "error", started);
        return reply;
      }
      if (code == CURLE_OK) {
        last = absl::UnavailableError(absl::StrCat("s3 ", r.op, " ", Where(r.key), ": HTTP ", reply.status, " ",
                                                   XmlText(reply.body, "Code"), " ", XmlText(reply.body, "Message")));
      } else if (Bounded(r) && (code == CURLE_ABORTED_BY_CALLBACK ||
                                (code == CURLE_OPERATION_TIMEDOUT && CallTimeLeftNanos() <= 0))) {
        // The caller's bounds ended it; still, a store that sent nothing for seconds is not
        // answering, and /healthz should say so.
        if (attempt_started.ElapsedNanos() > int64_t{5'000'000'000}) healthy_ = false;
        return CallerGone(r, attempt + 1, last, started);
      } else if (!RetryableCurl(code)) {
        break;
      }
    }
    healthy_ = false;
    Observe(r.op, "error", started);
    return last;
  }

  // The answer to a request whose caller stopped waiting or went away (CallBounds).
  absl::Status CallerGone(const Request& r, int tries, const absl::Status& last, const Stopwatch& started) {
    const CallBounds* bounds = CurrentCallBounds();
    const bool gone = bounds != nullptr && bounds->cancelled && bounds->cancelled();
    const std::string why = absl::StrCat("s3 ", r.op, " ", Where(r.key), ": the caller ",
                                         gone ? "went away" : "stopped waiting", " after ", tries, " tries",
                                         last.ok() ? "" : absl::StrCat(" (last: ", last.message(), ")"));
    Observe(r.op, "error", started);
    return gone ? absl::CancelledError(why) : absl::DeadlineExceededError(why);
  }

  CURLcode Perform(const Request& r, const std::string& payload_hash, Reply* reply, absl::Status* error) {
    CURL* curl = Acquire();
    Transfer transfer{r.body, r.body, reply, r.max_reply_bytes};
    curl_slist* headers = nullptr;
    headers = curl_slist_append(headers, absl::StrCat("x-amz-content-sha256: ", payload_hash).c_str());
    if (!r.body.empty()) headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
    if (!settings_.session_token.empty()) {
      headers = curl_slist_append(headers, absl::StrCat("x-amz-security-token: ", settings_.session_token).c_str());
    }
    if (r.range) {
      headers = curl_slist_append(
          headers, absl::StrCat("range: bytes=", r.range->offset, "-", r.range->offset + r.range->length - 1).c_str());
    }
    if (r.content_type != nullptr) headers = curl_slist_append(headers, absl::StrCat("content-type: ", r.content_type).c_str());
    if (!hooks_.amz_date.empty()) headers = curl_slist_append(headers, absl::StrCat("x-amz-date: ", hooks_.amz_date).c_str());
    curl_slist* connect_to = hooks_.connect_to.empty() ? nullptr : curl_slist_append(nullptr, hooks_.connect_to.c_str());

    const std::string url = Url(r);
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    if (connect_to != nullptr) curl_easy_setopt(curl, CURLOPT_CONNECT_TO, connect_to);
    curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, sigv4_.c_str());
    curl_easy_setopt(curl, CURLOPT_USERNAME, settings_.access_key.c_str());
    curl_easy_setopt(curl, CURLOPT_PASSWORD, settings_.secret_key.c_str());
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    // A peer that stops sending for 15 s is a failed try (the request is retried), however
    // large the object: no overall timeout that a slow but moving 1 GB download would hit.
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, 15L);
    // A read within a query, though, no longer than its caller waits, and not after it went
    // away. Writes (a delete, a summary) run to the end: half done they would leave debris.
    const int64_t left_ns = Bounded(r) ? CallTimeLeftNanos() : std::numeric_limits<int64_t>::max();
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS,
                     left_ns == std::numeric_limits<int64_t>::max()
                         ? 0L
                         : static_cast<long>(std::max<int64_t>(1, (left_ns + 999'999) / 1'000'000)));
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, OnProgress);
    static char bounded_marker;
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, Bounded(r) ? &bounded_marker : nullptr);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
    const std::string_view method = r.method;
    if (method == "PUT") {
      curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(curl, CURLOPT_READFUNCTION, OnUpload);
      curl_easy_setopt(curl, CURLOPT_READDATA, &transfer);
      curl_easy_setopt(curl, CURLOPT_SEEKFUNCTION, OnSeek);
      curl_easy_setopt(curl, CURLOPT_SEEKDATA, &transfer);
      curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
    } else if (method == "POST") {
      curl_easy_setopt(curl, CURLOPT_POST, 1L);
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS, r.body.data());
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
    } else if (method == "HEAD") {
      curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
    } else if (method == "DELETE") {
      curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "DELETE");
    }
    CURLcode code = curl_easy_perform(curl);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply->status);
    if (code == CURLE_OK && method == "GET" && reply->content_length >= 0 &&
        static_cast<int64_t>(reply->body.size()) != reply->content_length && reply->status < 300) {
      code = CURLE_PARTIAL_FILE;  // a body cut short without curl noticing
    }
    if (code != CURLE_OK) {
      *error = transfer.overflow
                   ? absl::ResourceExhaustedError(absl::StrCat("s3 ", r.op, " ", Where(r.key), ": reply over ",
                                                               r.max_reply_bytes, " bytes"))
                   : absl::UnavailableError(absl::StrCat("s3 ", r.op, " ", Where(r.key), ": ", curl_easy_strerror(code)));
    }
    curl_slist_free_all(headers);
    curl_slist_free_all(connect_to);
    Release(curl);
    return code;
  }

  // Maps an answer that is not 2xx to a status naming the object and S3's reason.
  absl::Status Check(const absl::StatusOr<Reply>& reply, std::string_view op, std::string_view key) const {
    if (!reply.ok()) return reply.status();
    if (reply->status >= 200 && reply->status < 300) return absl::OkStatus();
    std::string message = absl::StrCat("s3 ", std::string(op), " ", Where(key), ": HTTP ", reply->status);
    if (std::string code = XmlText(reply->body, "Code"); !code.empty()) {
      absl::StrAppend(&message, " ", code, ": ", XmlText(reply->body, "Message"));
    }
    switch (reply->status) {
      case 404: return absl::NotFoundError(message);
      case 401:
      case 403: return absl::PermissionDeniedError(message);
      default: return reply->status >= 500 ? absl::UnavailableError(message) : absl::FailedPreconditionError(message);
    }
  }

  // Reads are what a waiting caller bounds (CallBounds); writes are not.
  static bool Bounded(const Request& r) {
    const std::string_view method = r.method;
    return method == "GET" || method == "HEAD";
  }

  // curl calls it about once a second, also while nothing moves: a non-zero answer aborts.
  // `bounded` is the request's Bounded().
  static int OnProgress(void* bounded, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    const CallBounds* bounds = CurrentCallBounds();
    return bounded != nullptr && bounds != nullptr && bounds->cancelled && bounds->cancelled() ? 1 : 0;
  }

  void Backoff(int attempt, bool bounded) {
    const int64_t cap_ms = std::min<int64_t>(2000, int64_t{50} << std::min(attempt, 10));
    int64_t sleep_ms;
    {
      absl::MutexLock lock(&mu_);
      sleep_ms = std::uniform_int_distribution<int64_t>(cap_ms / 4, cap_ms)(rng_);
    }
    if (bounded) sleep_ms = std::clamp<int64_t>(CallTimeLeftNanos() / 1'000'000, 0, sleep_ms);
    std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
  }

  void Observe(const char* op, const char* result, const Stopwatch& started) {
    if (settings_.on_request) {
      settings_.on_request(op, result, started.ElapsedSeconds());
    }
  }

  // Easy handles are reused so their connections are (curl keeps one cache per handle).
  CURL* Acquire() {
    {
      absl::MutexLock lock(&mu_);
      if (!idle_.empty()) {
        CURL* handle = idle_.back();
        idle_.pop_back();
        curl_easy_reset(handle);
        return handle;
      }
    }
    return curl_easy_init();
  }
  void Release(CURL* handle) {
    absl::MutexLock lock(&mu_);
    if (idle_.size() < 32) {
      idle_.push_back(handle);
      return;
    }
    curl_easy_cleanup(handle);
  }

  const S3Location where_;
  const S3Settings settings_;
  const S3TestHooks hooks_;
  const std::string sigv4_;
  std::atomic<bool> healthy_{true};
  absl::Mutex mu_;
  std::vector<CURL*> idle_ ABSL_GUARDED_BY(mu_);
  std::mt19937_64 rng_ ABSL_GUARDED_BY(mu_){std::random_device{}()};
};

S3Writer::~S3Writer() {
  if (!finished_ && !upload_id_.empty()) client_->AbortMultipart(key_, upload_id_);
}

absl::Status S3Writer::Append(std::string_view bytes) {
  while (!bytes.empty()) {
    const size_t room = static_cast<size_t>(client_->part_bytes()) - buffer_.size();
    const size_t take = std::min(room, bytes.size());
    buffer_.append(bytes.data(), take);
    bytes.remove_prefix(take);
    if (buffer_.size() == static_cast<size_t>(client_->part_bytes())) {
      if (absl::Status s = SendPart(); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

absl::Status S3Writer::SendPart() {
  if (upload_id_.empty()) {
    auto id = client_->CreateMultipart(key_);
    if (!id.ok()) return id.status();
    upload_id_ = *std::move(id);
  }
  auto etag = client_->UploadPart(key_, upload_id_, static_cast<int>(etags_.size()) + 1, buffer_);
  if (!etag.ok()) return etag.status();
  etags_.push_back(*std::move(etag));
  buffer_.clear();
  return absl::OkStatus();
}

absl::Status S3Writer::Finish() {
  if (upload_id_.empty()) {
    // Smaller than one part: a plain PUT, one request instead of three.
    if (absl::Status s = client_->Put(key_, buffer_); !s.ok()) return s;
  } else {
    if (!buffer_.empty()) {
      if (absl::Status s = SendPart(); !s.ok()) return s;
    }
    if (absl::Status s = client_->CompleteMultipart(key_, upload_id_, etags_); !s.ok()) return s;
  }
  finished_ = true;
  buffer_.clear();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ObjectClient>> OpenS3Client(const S3Location& where, const S3Settings& settings,
                                                            const S3TestHooks& hooks) {
  static std::once_flag curl_init;
  std::call_once(curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (where.bucket.empty()) return absl::InvalidArgumentError("s3 object store without a bucket");
  S3Location normalized = where;
  if (!normalized.prefix.empty() && normalized.prefix.back() != '/') normalized.prefix += '/';
  if (settings.access_key.empty() || settings.secret_key.empty()) {
    return absl::InvalidArgumentError(
        "s3 object store without credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or --s3_credentials_file");
  }
  return std::make_unique<S3Client>(normalized, settings, hooks);
}

}  // namespace fleetprof::cluster
