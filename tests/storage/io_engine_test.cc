#include "storage/io_engine.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <thread>
#include <vector>

#include "storage/posix_file.h"
#include "tests/storage/storage_test_util.h"

namespace strata::storage {
namespace {

using testing::FillPage;
using testing::MustAllocate;
using testing::PageMatches;
using testing::ScratchDir;

class IoEngineTest : public ::testing::TestWithParam<IoBackend> {
 protected:
  void SetUp() override {
    path_ = dir_.path() + "/data";
    fd_.reset(::open(path_.c_str(), O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0644));
    ASSERT_TRUE(fd_.valid()) << "open " << path_ << ": " << std::strerror(errno);
    ASSERT_EQ(::posix_fallocate(fd_.get(), 0, kFileBytes), 0);
  }

  std::unique_ptr<IoEngine> make_engine(uint32_t depth = 8, uint64_t request = 64 * kKiB,
                                        FaultInjector* faults = nullptr) {
    IoEngineOptions options;
    options.backend = GetParam();
    options.queue_depth = depth;
    options.request_bytes = request;
    options.faults = faults;
    Result<std::unique_ptr<IoEngine>> engine = IoEngine::Create(options);
    if (!engine.ok()) {
      ADD_FAILURE() << engine.status().to_string();
      return nullptr;
    }
    EXPECT_EQ((*engine)->backend(), GetParam());
    return std::move(engine).value();
  }

  static constexpr uint64_t kFileBytes = 8 * kMiB;
  ScratchDir dir_;
  std::string path_;
  UniqueFd fd_;
};

TEST_P(IoEngineTest, LargeTransferIsSplitAndRoundTrips) {
  auto engine = make_engine(4, 64 * kKiB);
  ASSERT_NE(engine, nullptr);
  Result<int> file = engine->register_file(fd_.get(), path_);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  const uint64_t bytes = 3 * kMiB + 4 * kKiB;  // not a multiple of the request size
  AlignedBuffer out = MustAllocate(bytes);
  AlignedBuffer in = MustAllocate(bytes);
  FillPage(out.data(), bytes, 7, 1);
  ASSERT_TRUE(engine->write(*file, 4 * kKiB, out.data(), bytes).get().ok());
  ASSERT_TRUE(engine->read(*file, 4 * kKiB, in.data(), bytes).get().ok());
  EXPECT_TRUE(PageMatches(in.data(), bytes, 7, 1));
  IoEngineStats stats = engine->stats();
  EXPECT_EQ(stats.bytes_written, bytes);
  EXPECT_EQ(stats.bytes_read, bytes);
  EXPECT_EQ(stats.requests, 2 * (bytes + 64 * kKiB - 1) / (64 * kKiB));
}

TEST_P(IoEngineTest, FixedBuffersAreUsedWhenRegistered) {
  auto engine = make_engine();
  ASSERT_NE(engine, nullptr);
  Result<int> file = engine->register_file(fd_.get(), path_);
  ASSERT_TRUE(file.ok());
  AlignedBuffer buf = MustAllocate(256 * kKiB);
  ASSERT_TRUE(engine->register_buffer(buf.data(), buf.size()).ok());
  FillPage(buf.data(), buf.size(), 1, 2);
  ASSERT_TRUE(engine->write(*file, 0, buf.data(), buf.size()).get().ok());
  std::memset(buf.data(), 0, buf.size());
  ASSERT_TRUE(engine->read(*file, 0, buf.data() + 128 * kKiB, 128 * kKiB).get().ok());
  ASSERT_TRUE(engine->read(*file, 0, buf.data(), 128 * kKiB).get().ok());
  EXPECT_TRUE(PageMatches(buf.data(), 128 * kKiB, 1, 2));
  if (GetParam() == IoBackend::kUring) {
    EXPECT_GT(engine->stats().fixed_buffer_requests, 0u);
  }
  engine->unregister_buffer(buf.data());
  ASSERT_TRUE(engine->read(*file, 0, buf.data(), 4 * kKiB).get().ok());
}

TEST_P(IoEngineTest, MisalignedRequestsAreRejectedAtTheApi) {
  auto engine = make_engine();
  ASSERT_NE(engine, nullptr);
  Result<int> file = engine->register_file(fd_.get(), path_);
  ASSERT_TRUE(file.ok());
  AlignedBuffer buf = MustAllocate(16 * kKiB);
  Status offset = engine->read(*file, 512, buf.data(), 4096).get();
  EXPECT_EQ(offset.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(offset.message().find(path_), std::string::npos) << offset.message();
  EXPECT_EQ(engine->read(*file, 0, buf.data(), 1000).get().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(engine->read(*file, 0, buf.data() + 8, 4096).get().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(engine->read(*file + 5, 0, buf.data(), 4096).get().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(engine->stats().requests, 0u);
}

TEST_P(IoEngineTest, ReadPastEndNamesFileAndOffset) {
  auto engine = make_engine();
  ASSERT_NE(engine, nullptr);
  Result<int> file = engine->register_file(fd_.get(), path_);
  ASSERT_TRUE(file.ok());
  AlignedBuffer buf = MustAllocate(8 * kKiB);
  Status s = engine->read(*file, kFileBytes, buf.data(), 8 * kKiB).get();
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange) << s.to_string();
  EXPECT_NE(s.message().find(path_), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("0x800000"), std::string::npos) << s.message();
}

TEST_P(IoEngineTest, InjectedFaultsSurfaceWithContext) {
  FaultInjector faults;
  // Queue depth 1: requests reach the injector in offset order on both backends (the sync
  // backend's pool would otherwise race, and "the third request" could be any of the four).
  auto engine = make_engine(1, 64 * kKiB, &faults);
  ASSERT_NE(engine, nullptr);
  Result<int> file = engine->register_file(fd_.get(), path_);
  ASSERT_TRUE(file.ok());
  AlignedBuffer buf = MustAllocate(256 * kKiB);

  faults.fail_nth_request(3);  // the third 64 KiB request of a four-request transfer
  Status eio = engine->write(*file, 1 * kMiB, buf.data(), 256 * kKiB).get();
  EXPECT_EQ(eio.code(), StatusCode::kIoError) << eio.to_string();
  EXPECT_NE(eio.message().find(path_), std::string::npos) << eio.message();
  EXPECT_NE(eio.message().find("offset 0x120000"), std::string::npos) << eio.message();
  EXPECT_TRUE(engine->write(*file, 1 * kMiB, buf.data(), 256 * kKiB).get().ok());

  faults.enospc_after_bytes(128 * kKiB);
  Status full = engine->write(*file, 0, buf.data(), 256 * kKiB).get();
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted) << full.to_string();
  EXPECT_NE(full.message().find("No space left"), std::string::npos) << full.message();
  EXPECT_TRUE(engine->read(*file, 0, buf.data(), 256 * kKiB).get().ok()) << "reads unaffected";
  faults.clear();

  faults.set_latency_ns(30'000'000);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(engine->read(*file, 0, buf.data(), 4 * kKiB).get().ok());
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(30));
  EXPECT_EQ(faults.injected(), 3u) << "one EIO, two ENOSPC requests";
}

TEST_P(IoEngineTest, ShortTransfersAreRequeuedUntilEveryByteMoved) {
  FaultInjector faults;
  auto engine = make_engine(4, 64 * kKiB, &faults);
  ASSERT_NE(engine, nullptr);
  Result<int> file = engine->register_file(fd_.get(), path_);
  ASSERT_TRUE(file.ok());
  AlignedBuffer out = MustAllocate(256 * kKiB);
  AlignedBuffer in = MustAllocate(256 * kKiB);
  FillPage(out.data(), out.size(), 5, 5);
  faults.short_transfers(true);
  ASSERT_TRUE(engine->write(*file, 64 * kKiB, out.data(), out.size()).get().ok());
  ASSERT_TRUE(engine->read(*file, 64 * kKiB, in.data(), in.size()).get().ok());
  EXPECT_TRUE(PageMatches(in.data(), in.size(), 5, 5));
  // Each 64 KiB request moves 32, 16, 8, 4 KiB and then its last 4 KiB: four requeues.
  EXPECT_EQ(engine->stats().requeued, 2u * 4 * 4);
  EXPECT_EQ(engine->stats().bytes_written, out.size());
}

TEST_P(IoEngineTest, EagainIsRetriedThenReported) {
  FaultInjector faults;
  auto engine = make_engine(1, 64 * kKiB, &faults);
  ASSERT_NE(engine, nullptr);
  Result<int> file = engine->register_file(fd_.get(), path_);
  ASSERT_TRUE(file.ok());
  AlignedBuffer buf = MustAllocate(64 * kKiB);
  faults.eagain_next_requests(5);
  EXPECT_TRUE(engine->read(*file, 0, buf.data(), buf.size()).get().ok());
  EXPECT_EQ(engine->stats().requeued, 5u);
  // A request that never gets through is not retried forever.
  faults.eagain_next_requests(IoEngine::kMaxRetries + 10);
  Status s = engine->read(*file, 0, buf.data(), buf.size()).get();
  EXPECT_EQ(s.code(), StatusCode::kIoError) << s.to_string();
  EXPECT_NE(s.message().find("Resource temporarily unavailable"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(path_), std::string::npos) << s.message();
}

TEST_P(IoEngineTest, BatchSubmissionRunsEveryCallbackOnce) {
  auto engine = make_engine(4, 16 * kKiB);
  ASSERT_NE(engine, nullptr);
  Result<int> file = engine->register_file(fd_.get(), path_);
  ASSERT_TRUE(file.ok());
  constexpr int kRequests = 64;
  AlignedBuffer buf = MustAllocate(kRequests * 32 * kKiB);
  std::atomic<int> done{0}, failed{0};
  std::latch all(kRequests);
  std::vector<IoRequest> batch;
  for (int i = 0; i < kRequests; ++i) {
    FillPage(buf.data() + i * 32 * kKiB, 32 * kKiB, i, 3);
    batch.push_back(IoRequest{IoOp::kWrite, *file, static_cast<uint64_t>(i) * 32 * kKiB,
                              buf.data() + i * 32 * kKiB, 32 * kKiB, [&](const Status& s) {
                                if (!s.ok()) failed.fetch_add(1);
                                done.fetch_add(1);
                                all.count_down();
                              }});
  }
  ASSERT_TRUE(engine->submit(batch).ok());
  all.wait();
  EXPECT_EQ(done.load(), kRequests);
  EXPECT_EQ(failed.load(), 0);
  std::memset(buf.data(), 0, buf.size());
  ASSERT_TRUE(engine->read(*file, 0, buf.data(), buf.size()).get().ok());
  for (int i = 0; i < kRequests; ++i) {
    EXPECT_TRUE(PageMatches(buf.data() + i * 32 * kKiB, 32 * kKiB, i, 3)) << i;
  }
}

// Many threads, each with its own region, keep the queue full with reads and writes.
TEST_P(IoEngineTest, ConcurrentSubmittersAtFullQueueDepth) {
  auto engine = make_engine(16, 32 * kKiB);
  ASSERT_NE(engine, nullptr);
  Result<int> file = engine->register_file(fd_.get(), path_);
  ASSERT_TRUE(file.ok());
  constexpr int kThreads = 8;
  constexpr uint64_t kRegion = kFileBytes / kThreads;
  std::atomic<int> bad{0};
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      AlignedBuffer out = MustAllocate(kRegion);
      AlignedBuffer in = MustAllocate(kRegion);
      start.arrive_and_wait();
      for (uint64_t round = 0; round < 4; ++round) {
        FillPage(out.data(), kRegion, t, round);
        std::vector<std::future<Status>> writes;
        for (uint64_t off = 0; off < kRegion; off += 64 * kKiB) {
          writes.push_back(engine->write(*file, t * kRegion + off, out.data() + off, 64 * kKiB));
        }
        for (auto& f : writes) bad += !f.get().ok();
        if (!engine->read(*file, t * kRegion, in.data(), kRegion).get().ok()) ++bad;
        if (!PageMatches(in.data(), kRegion, t, round)) ++bad;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, IoEngineTest,
                         ::testing::Values(IoBackend::kUring, IoBackend::kSync),
                         [](const auto& info) { return std::string(IoBackendName(info.param)); });

TEST(IoEngineCreate, RejectsBadOptions) {
  IoEngineOptions options;
  options.queue_depth = 0;
  EXPECT_EQ(IoEngine::Create(options).status().code(), StatusCode::kInvalidArgument);
  options.queue_depth = 4;
  options.request_bytes = 6000;
  Result<std::unique_ptr<IoEngine>> r = IoEngine::Create(options);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("4096"), std::string::npos);
}

TEST(IoEngineCreate, AutoPrefersIoUring) {
  Result<std::unique_ptr<IoEngine>> r = IoEngine::Create(IoEngineOptions{});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)->backend(), IoBackend::kUring) << "io_uring works on this machine";
}

TEST(IoEngineCreate, FallsBackToThreadPoolWhereIoUringIsRefused) {
  FaultInjector faults;
  faults.refuse_io_uring(true);
  IoEngineOptions options;
  options.faults = &faults;
  Result<std::unique_ptr<IoEngine>> fallback = IoEngine::Create(options);
  ASSERT_TRUE(fallback.ok()) << fallback.status().to_string();
  EXPECT_EQ((*fallback)->backend(), IoBackend::kSync);
  options.backend = IoBackend::kUring;
  Result<std::unique_ptr<IoEngine>> forced = IoEngine::Create(options);
  EXPECT_EQ(forced.status().code(), StatusCode::kNotSupported);
  EXPECT_NE(forced.status().message().find("io_uring"), std::string::npos);
}

}  // namespace
}  // namespace strata::storage
