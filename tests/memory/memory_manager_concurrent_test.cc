// Randomised concurrent access against a shadow copy (runs under TSan: no `Stress` in the
// names), and Belady vs LRU on a training trace.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <random>
#include <thread>

#include "memory/memory_manager.h"
#include "memory/training_trace.h"
#include "tests/memory/memory_test_util.h"

namespace strata::memory {
namespace {

using testing::CheckPattern;
using testing::FillPattern;
using testing::MakeRig;
using testing::Rig;
using testing::RigConfig;

struct RandomAccessParams {
  uint64_t device_pages;
  uint64_t host_pages;
  EvictionPolicy policy;
  bool real_store = false;
};

class MemoryManagerConcurrentRandom : public ::testing::TestWithParam<RandomAccessParams> {};

// Several threads acquire random pages on random tiers for read, write or overwrite, one page
// at a time. Writers fill the page with a pattern tagged uniquely and record the tag in the
// shadow while they hold the write pin; readers check the page against the shadow. Pages are
// checked on the device through an honest device->host copy on the thread's own stream.
TEST_P(MemoryManagerConcurrentRandom, ConcurrentRandomAccessMatchesShadow) {
  const RandomAccessParams sp = GetParam();
  RigConfig c;
  c.page_bytes = 16 * 1024;
  c.num_pages = 12;
  c.device_pages = sp.device_pages;
  c.host_pages = sp.host_pages;
  c.nvme_pages = 2 * c.num_pages;
  c.policy = sp.policy;
  c.real_store = sp.real_store;
  c.stall_timeout_ms = 60'000;
  Rig rig = MakeRig(c);
  const uint64_t page = c.page_bytes;
  constexpr int kThreads = 4;
  constexpr int kOps = 600;
  std::vector<std::atomic<uint64_t>> shadow(c.num_pages);
  for (auto& s : shadow) s.store(0);
  std::atomic<uint64_t> next_tag{1};
  std::atomic<int> failures{0};

  auto worker = [&](int id) {
    std::mt19937_64 rng(1234 + id);
    std::unique_ptr<Stream> stream = rig.device->create_stream("stress" + std::to_string(id));
    std::vector<uint64_t> buf(page / 8);
    for (int op = 0; op < kOps && failures.load() == 0; ++op) {
      const PageId p = rng() % c.num_pages;
      const Tier tier = rng() % 2 ? Tier::kDevice : Tier::kHost;
      const int kind = rng() % 10;  // 0-5 read, 6-8 write, 9 overwrite
      const Access access = kind < 6   ? Access::kRead
                            : kind < 9 ? Access::kWrite
                                       : Access::kOverwrite;
      auto fut = rig.mm->acquire(p, tier, access, {.holder = "stress " + std::to_string(id)});
      if (fut.wait_for(std::chrono::seconds(120)) != std::future_status::ready) {
        ADD_FAILURE() << "acquire of page " << p << " did not complete: deadlock?\n"
                      << rig.mm->stall_report();
        failures.fetch_add(1);
        return;
      }
      auto ref = fut.get();
      if (!ref.ok()) {
        ADD_FAILURE() << ref.status().ToString();
        failures.fetch_add(1);
        return;
      }
      if (access != Access::kOverwrite) {  // check the contents against the shadow
        const uint64_t tag = shadow[p].load();
        const void* bytes = ref->data();
        if (tier == Tier::kDevice) {
          Status st = testing::CopyAndWait(*rig.device, *stream, buf.data(), ref->data(), page,
                                           CopyKind::kDeviceToHost);
          ASSERT_TRUE(st.ok()) << st.ToString();
          bytes = buf.data();
        }
        const int64_t bad = CheckPattern(bytes, page, p, tag);
        if (bad >= 0) {
          const PageResidency r = rig.mm->residency(p);
          ADD_FAILURE() << "page " << p << " on " << TierName(tier) << " word " << bad
                        << " does not match tag " << tag << "; holds tag "
                        << testing::TagOf(bytes, p) << "; copies device " << r.valid[0] << " host "
                        << r.valid[1] << " nvme " << r.valid[2] << " staged " << r.nvme_staged;
          failures.fetch_add(1);
        }
      }
      if (access != Access::kRead) {
        const uint64_t tag = next_tag.fetch_add(1);
        if (tier == Tier::kDevice) {
          FillPattern(buf.data(), page, p, tag);
          Status st = testing::CopyAndWait(*rig.device, *stream, ref->data(), buf.data(), page,
                                           CopyKind::kHostToDevice);
          ASSERT_TRUE(st.ok()) << st.ToString();
        } else {
          FillPattern(ref->data(), page, p, tag);
        }
        shadow[p].store(tag);
      }
      if (op % 50 == 49 && id == 0) {  // a step boundary: commit NVMe versions in one batch
        ref->release();
        Status st = rig.mm->flush_all();
        if (st.ok()) st = rig.mm->commit_nvme();
        EXPECT_TRUE(st.ok()) << st.ToString();
      }
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.emplace_back(worker, i);
  for (std::thread& t : threads) t.join();
  ASSERT_EQ(failures.load(), 0);

  // Final pass: every page, read on the host, matches the shadow.
  for (PageId p = 0; p < c.num_pages; ++p) {
    auto ref = rig.mm->acquire_sync(p, Tier::kHost, Access::kRead);
    ASSERT_TRUE(ref.ok()) << ref.status().ToString();
    EXPECT_EQ(CheckPattern(ref->data(), page, p, shadow[p].load()), -1) << "page " << p;
  }
  const MemoryStats s = rig.mm->stats();
  for (int t = 0; t < kNumTiers; ++t) {
    EXPECT_LE(s.tiers[t].peak_bytes, s.tiers[t].capacity_bytes) << TierName(Tier(t));
  }
  EXPECT_LE(rig.device->stats().peak_bytes, c.device_pages * page);
  EXPECT_GT(s.moved_bytes(), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Budgets, MemoryManagerConcurrentRandom,
    ::testing::Values(RandomAccessParams{1, 1, EvictionPolicy::kLru},  // the minimum that can work
                      RandomAccessParams{1, 2, EvictionPolicy::kBelady},
                      RandomAccessParams{2, 3, EvictionPolicy::kLru},
                      RandomAccessParams{4, 6, EvictionPolicy::kBelady},
                      RandomAccessParams{1, 2, EvictionPolicy::kLru, /*real_store=*/true},
                      RandomAccessParams{3, 4, EvictionPolicy::kBelady, /*real_store=*/true}),
    [](const ::testing::TestParamInfo<RandomAccessParams>& info) {
      return "dev" + std::to_string(info.param.device_pages) + "_host" +
             std::to_string(info.param.host_pages) +
             (info.param.policy == EvictionPolicy::kLru ? "_lru" : "_belady") +
             (info.param.real_store ? "_pagestore" : "_fake");
    });

uint64_t RunTrace(EvictionPolicy policy, int blocks, uint64_t device_pages, uint64_t host_pages,
                  int steps, MemoryStats* out) {
  RigConfig c;
  c.page_bytes = 16 * 1024;
  c.num_pages = 4 * blocks;
  c.device_pages = device_pages;
  c.host_pages = host_pages;
  c.nvme_pages = 4 * c.num_pages;
  c.policy = policy;
  Rig rig = MakeRig(c);
  const std::vector<TraceAccess> trace = SyntheticTrainingStep(blocks);
  if (policy == EvictionPolicy::kBelady) rig.mm->set_access_plan(PlanOf(trace));
  for (int s = 0; s < steps; ++s) {
    for (const TraceAccess& op : trace) {
      auto ref = rig.mm->acquire_sync(op.page, op.tier, op.access);
      STRATA_CHECK(ref.ok()) << ref.status().ToString();
    }
  }
  *out = rig.mm->stats();
  return out->moved_bytes();
}

TEST(MemoryManagerEvictionTest, BeladyMovesNoMoreThanLruOnATrainingTrace) {
  struct Case {
    int blocks;
    uint64_t device_pages, host_pages;
  };
  for (const Case& k : {Case{8, 4, 8}, Case{8, 6, 16}, Case{12, 5, 20}, Case{6, 3, 6}}) {
    MemoryStats belady, lru;
    const uint64_t b =
        RunTrace(EvictionPolicy::kBelady, k.blocks, k.device_pages, k.host_pages, 3, &belady);
    const uint64_t l =
        RunTrace(EvictionPolicy::kLru, k.blocks, k.device_pages, k.host_pages, 3, &lru);
    std::printf(
        "blocks %d device %llu host %llu pages: moved belady %llu lru %llu bytes "
        "(h2d %llu/%llu d2h %llu/%llu nvme_r %llu/%llu nvme_w %llu/%llu)\n",
        k.blocks, (unsigned long long)k.device_pages, (unsigned long long)k.host_pages,
        (unsigned long long)b, (unsigned long long)l, (unsigned long long)belady.h2d_bytes,
        (unsigned long long)lru.h2d_bytes, (unsigned long long)belady.d2h_bytes,
        (unsigned long long)lru.d2h_bytes, (unsigned long long)belady.nvme_read_bytes,
        (unsigned long long)lru.nvme_read_bytes, (unsigned long long)belady.nvme_write_bytes,
        (unsigned long long)lru.nvme_write_bytes);
    EXPECT_LE(b, l) << "blocks " << k.blocks;
  }
}

}  // namespace
}  // namespace strata::memory
