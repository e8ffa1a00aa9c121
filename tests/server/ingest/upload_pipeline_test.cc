// The two ends of an upload's byte pipeline: the sender's ChunkProducer, which reads and
// compresses ahead of the network, and the server's ChunkQueue, which hands inflated chunks to
// the analysis and their buffers back for the next chunk.

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "common/gzip_member.h"
#include "common/threads.h"
#include "gtest/gtest.h"
#include "rpc/chunk_producer.h"
#include "server/ingest/chunk_queue.h"

namespace fleetprof {
namespace {

std::string TempFile(const std::string& name, const std::string& bytes) {
  const auto path = std::filesystem::path(::testing::TempDir()) / name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path.string();
}

std::string Text(size_t n) {
  std::string out;
  for (int i = 0; out.size() < n; ++i) out += "{\"name\": \"aten::add\", \"ts\": " + std::to_string(i) + "},\n";
  out.resize(n);
  return out;
}

// Every chunk from `producer`, inflated when it is a gzip member, in order.
std::string Drain(ChunkProducer& producer, int* chunks) {
  std::string all;
  *chunks = 0;
  while (std::optional<ChunkProducer::Chunk> chunk = producer.Next()) {
    ++*chunks;
    std::string plain = chunk->body;
    if (producer.compressed()) {
      EXPECT_TRUE(GunzipMember(chunk->body, 1 << 20, &plain).ok());
    }
    EXPECT_EQ(static_cast<int64_t>(plain.size()), chunk->file_bytes);
    all += plain;
  }
  EXPECT_FALSE(producer.Next().has_value()) << "the end stays the end";
  return all;
}

TEST(ChunkProducer, SendsTheFileFromItsOffsetAsGzipMembers) {
  const std::string text = Text(300000);
  const std::string path = TempFile("producer.json", text);
  int chunks = 0;
  for (bool threaded : {true, false}) {
    if (!threaded) FailThreadStartsForTesting(1);  // made as asked for: the same chunks
    ChunkProducer whole(path, 0, static_cast<int64_t>(text.size()), 64 << 10);
    ASSERT_TRUE(whole.status().ok());
    EXPECT_TRUE(whole.compressed());
    EXPECT_EQ(Drain(whole, &chunks), text);
    EXPECT_EQ(chunks, 5);
  }
  ChunkProducer resumed(path, 100001, static_cast<int64_t>(text.size()), 64 << 10);
  EXPECT_EQ(resumed.offset(), 100001);
  EXPECT_EQ(Drain(resumed, &chunks), text.substr(100001));
  // A size checked before the file grew holds: the bytes past it are not sent.
  ChunkProducer capped(path, 0, 1000, 64 << 10);
  EXPECT_EQ(Drain(capped, &chunks), text.substr(0, 1000));
}

TEST(ChunkProducer, SendsAGzipFileAsItsBytesAndStopsWhereAFileEnds) {
  const std::string gz = GzipMember(Text(50000));
  const std::string path = TempFile("producer.json.gz", gz);
  ChunkProducer producer(path, 0, static_cast<int64_t>(gz.size()), 1000);
  EXPECT_FALSE(producer.compressed());
  int chunks = 0;
  EXPECT_EQ(Drain(producer, &chunks), gz);
  // A file that shrank after its size was taken ends early; the server then reports how much
  // it holds.
  ChunkProducer shrunk(path, 0, static_cast<int64_t>(gz.size()) + 5000, 1000);
  EXPECT_EQ(Drain(shrunk, &chunks), gz);
  ChunkProducer missing(path + ".gone", 0, 10, 1000);
  EXPECT_TRUE(absl::IsNotFound(missing.status()));
  EXPECT_FALSE(missing.Next().has_value());
}

TEST(ChunkProducer, StopsWhenDroppedBeforeTheEnd) {
  const std::string text = Text(1 << 20);
  const std::string path = TempFile("dropped.json", text);
  ChunkProducer producer(path, 0, static_cast<int64_t>(text.size()), 4096);
  ASSERT_TRUE(producer.Next().has_value());
  // Its thread waits for room after a couple of chunks; the destructor must not hang.
}

TEST(ChunkQueue, HandsReadChunksBackAsSpareBuffers) {
  ChunkQueue queue("q", 1 << 20);
  EXPECT_TRUE(queue.TakeSpare().empty()) << "nothing read yet";
  ASSERT_TRUE(queue.Push(std::string(1000, 'a')));
  ASSERT_TRUE(queue.Push(std::string(10, 'b')));
  char buffer[600];
  ASSERT_EQ(*queue.Read(buffer, sizeof buffer), 600u);
  EXPECT_TRUE(queue.TakeSpare().empty()) << "a chunk half read is still the queue's";
  ASSERT_EQ(*queue.Read(buffer, sizeof buffer), 400u);
  std::string spare = queue.TakeSpare();
  EXPECT_EQ(spare, std::string(1000, 'a'));
  EXPECT_TRUE(queue.TakeSpare().empty()) << "taken once";
  ASSERT_EQ(*queue.Read(buffer, sizeof buffer), 10u);
  queue.StopReading();
  EXPECT_TRUE(queue.TakeSpare().empty()) << "a queue no one reads keeps nothing";
}


TEST(ChunkQueue, CountsWhatAChunkHoldsNotItsLength) {
  // A reused 1 MiB buffer carrying 10 bytes fills a 1 MiB queue: a client alternating full
  // and tiny chunks cannot make it hold many megabytes under a small count.
  ChunkQueue queue("q", 1 << 20);
  std::string tiny(10, 't');
  tiny.reserve(1 << 20);
  ASSERT_TRUE(queue.Push(std::move(tiny)));
  std::atomic<bool> pushed{false};
  std::thread producer([&] {
    EXPECT_TRUE(queue.Push(std::string(5, 'u')));
    pushed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(pushed.load()) << "the queue is full";
  char buffer[16];
  ASSERT_EQ(*queue.Read(buffer, sizeof buffer), 10u);
  producer.join();
  EXPECT_TRUE(pushed.load());
  ASSERT_EQ(*queue.Read(buffer, sizeof buffer), 5u);
}

}  // namespace
}  // namespace fleetprof
