#pragma once
// One client connection of HttpServer, plain TCP or TLS (`Stream`), as a chain of
// asynchronous steps on its loop (one thread, so no strand is needed): [handshake] → read
// header → [100-continue] → read body → handle → write → read header again or close. Waiting
// for the client never holds a thread, so a slow client costs a socket, not a thread; each
// wait has a deadline (HttpServerOptions::timeout_s). Included by http_server.cc only.

#include <chrono>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "boost/asio/post.hpp"
#include "boost/asio/write.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "boost/beast/ssl.hpp"
#include "api/http_status.h"
#include "common/clock.h"
#include "server/http/http_server_impl.h"

namespace fleetprof {

namespace http_beast {
namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace net = boost::asio;

// When a connection began to wait or a handler to run: real time, as the sockets' deadlines are.
inline int64_t SteadyNanos() { return RealClock()->MonotonicNanos(); }

// Pieces a streamed body is read and sent in.
constexpr size_t kChunkBytes = 1 << 20;

template <class Stream>
class HttpConnection : public HttpConnectionBase, public std::enable_shared_from_this<HttpConnection<Stream>> {
 public:
  HttpConnection(HttpServer::Impl* server, HttpServer::Impl::Loop* loop, Stream stream)
      : server_(server), loop_(loop), stream_(std::move(stream)) {
    waiting_since_ns = SteadyNanos();
    loop_->connections.fetch_add(1);
  }
  ~HttpConnection() override {
    loop_->connections.fetch_sub(1);
    if (registered_) server_->Unregister(registration_);
  }

  // On the accepting thread, before Start() is posted to the loop.
  void SetRegistration(HttpServer::Impl::Registration registration) {
    registration_ = registration;
    registered_ = true;
  }

  // On the loop's thread.
  void Start() {
    if constexpr (kTls) {
      Deadline();
      stream_.async_handshake(net::ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code ec) {
                                if (ec) return self->Close();
                                self->ReadHeader();
                              });
    } else {
      ReadHeader();
    }
  }

  void CloseIfWaiting() override {
    net::post(loop_->context, [self = this->shared_from_this()] {
      if (self->waiting.load()) self->Close();
    });
  }

 private:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;
  beast::tcp_stream& Tcp() { return beast::get_lowest_layer(stream_); }
  void Deadline() { Tcp().expires_after(std::chrono::seconds(server_->options.timeout_s)); }

  void ReadHeader() {
    waiting = true;
    shedding = false;
    waiting_since_ns = SteadyNanos();
    if (server_->stopping.load()) return Close();
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(server_->options.max_header_bytes));
    parser_->body_limit(static_cast<uint64_t>(server_->options.max_body_bytes));
    Deadline();  // the whole header by then, however slowly it trickles in
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = this->shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (ec) return Refuse(ec);
    waiting = false;
    const auto& header = parser_->get();
    head_ = header.method() == http::verb::head;
    keep_alive_ = header.keep_alive();
    version_ = header.version();
    if (parser_->is_done()) return Dispatch();
    Deadline();
    if (beast::iequals(header[http::field::expect], "100-continue")) {
      auto go_on = std::make_shared<http::response<http::empty_body>>(http::status::continue_, version_);
      http::async_write(stream_, *go_on, [self = this->shared_from_this(), go_on](beast::error_code ec, size_t) {
        if (ec) return self->Close();
        self->ReadBody();
      });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    http::async_read(stream_, buffer_, *parser_, [self = this->shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->Refuse(ec);
      self->Dispatch();
    });
  }

  // A request that cannot be read whole: a clear answer when there is one to give, then close.
  void Refuse(beast::error_code ec) {
    if (ec == http::error::header_limit) {
      return AnswerError(431, "RESOURCE_EXHAUSTED",
                         absl::StrCat("request header over the limit of ", server_->options.max_header_bytes, " bytes"));
    }
    if (ec == http::error::body_limit) {
      return AnswerError(413, "RESOURCE_EXHAUSTED",
                         absl::StrCat("request body over the limit of ", server_->options.max_body_bytes, " bytes"));
    }
    if (ec.category() == http::make_error_code(http::error::bad_target).category() &&
        ec != http::error::end_of_stream && ec != http::error::partial_message) {
      return AnswerError(400, "INVALID_ARGUMENT", absl::StrCat("malformed HTTP request: ", ec.message()));
    }
    Close();  // the client went away, or its deadline passed
  }

  void AnswerError(int status, const char* code, const std::string& message) {
    keep_alive_ = false;
    // The client may still be sending what we refused: read it away after the answer, or
    // closing with unread bytes would reset the connection before the client reads it.
    drain_after_answer_ = true;
    if (version_ == 0) version_ = 11;
    HttpResponse response;
    response.status = status;
    response.SetContent(HttpErrorJson(code, message), "application/json");
    Write(std::move(response));
  }

  void Dispatch() {
    auto request = std::make_shared<HttpRequest>();
    auto& message = parser_->get();
    request->method = head_ ? "GET" : std::string(message.method_string());
    request->target = std::string(message.target());
    const size_t q = request->target.find('?');
    request->path = DecodeUrlPath(std::string_view(request->target).substr(0, q));
    if (q != std::string::npos) request->query = request->target.substr(q + 1);
    for (const auto& field : message) request->headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    request->body = std::move(message.body());
    parser_.reset();
    // Handled right here, on the loop's thread: a request costs no hand-over to another
    // thread (a worker pool and the answer posted back cost 1.2-1.8x the p50 at 16 clients).
    // A slow handler delays this loop's other connections, not the other loops'; new
    // connections avoid a loop stuck in one (Impl::LeastBusy).
    loop_->handling_since_ns = SteadyNanos();
    HttpResponse response = server_->Handle(*request);
    loop_->handling_since_ns = 0;
    Write(std::move(response));
  }

  template <class Message>
  void SetHeaders(Message& message, const HttpResponse& response, bool keep) {
    message.version(version_);
    message.result(static_cast<unsigned>(response.status));
    message.keep_alive(keep);
    message.set(http::field::content_type, response.content_type);
    for (const auto& [name, value] : response.headers) message.insert(name, value);
  }

  void Write(HttpResponse response) {
    const bool keep = keep_alive_ && !server_->stopping.load();
    Deadline();
    if (response.stream != nullptr && !head_) return WriteStreamed(std::move(response), keep);
    auto message = std::make_shared<http::response<http::string_body>>();
    SetHeaders(*message, response, keep);
    if (head_) {
      message->content_length(response.body.size());
    } else {
      message->body() = std::move(response.body);
      message->prepare_payload();
    }
    http::async_write(stream_, *message, [self = this->shared_from_this(), message, keep](beast::error_code ec, size_t) {
      self->Written(ec, keep);
    });
  }

  void WriteStreamed(HttpResponse response, bool keep) {
    auto message = std::make_shared<http::response<http::empty_body>>();
    SetHeaders(*message, response, keep);
    message->chunked(true);
    auto serializer = std::make_shared<http::response_serializer<http::empty_body>>(*message);
    std::shared_ptr<analysis::ByteSource> source = std::move(response.stream);
    http::async_write_header(stream_, *serializer,
                             [self = this->shared_from_this(), message, serializer, source, keep](beast::error_code ec, size_t) {
                               if (ec) return self->Close();
                               self->NextChunk(source, keep);
                             });
  }

  // Reads the next piece (a file read may block this loop thread, as a handler may), then writes it.
  void NextChunk(std::shared_ptr<analysis::ByteSource> source, bool keep) {
    chunk_.resize(kChunkBytes);
    absl::StatusOr<size_t> n = source->Read(chunk_.data(), chunk_.size());
    if (!n.ok()) return Close();  // cut: never a short file that looks whole
    Deadline();
    if (*n == 0) {
      net::async_write(stream_, http::make_chunk_last(),
                       [self = this->shared_from_this(), keep](beast::error_code ec, size_t) { self->Written(ec, keep); });
      return;
    }
    net::async_write(stream_, http::make_chunk(net::const_buffer(chunk_.data(), *n)),
                     [self = this->shared_from_this(), source, keep](beast::error_code ec, size_t) {
                       if (ec) return self->Close();
                       self->NextChunk(source, keep);
                     });
  }

  void Written(beast::error_code ec, bool keep) {
    if (!ec && drain_after_answer_) return Drain();
    if (ec || !keep) return Close();
    ReadHeader();
  }

  // Half-closes, then discards what the client still sends, up to a limit and a deadline.
  void Drain() {
    beast::error_code ignored;
    Tcp().socket().shutdown(net::ip::tcp::socket::shutdown_send, ignored);
    Tcp().expires_after(std::chrono::seconds(2));
    DrainSome(0);
  }

  void DrainSome(size_t drained) {
    chunk_.resize(64 << 10);
    Tcp().async_read_some(net::buffer(chunk_), [self = this->shared_from_this(), drained](beast::error_code ec, size_t n) {
      if (ec || drained + n > kMaxDrainBytes) return self->Close();
      self->DrainSome(drained + n);
    });
  }
  static constexpr size_t kMaxDrainBytes = 64 << 20;

  void Close() {
    beast::error_code ignored;
    Tcp().socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
    Tcp().socket().close(ignored);
  }

  HttpServer::Impl* server_;
  HttpServer::Impl::Loop* loop_;
  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string chunk_;
  HttpServer::Impl::Registration registration_;
  bool registered_ = false;
  bool head_ = false;
  bool drain_after_answer_ = false;
  bool keep_alive_ = false;
  unsigned version_ = 11;
};

}  // namespace http_beast
}  // namespace fleetprof
