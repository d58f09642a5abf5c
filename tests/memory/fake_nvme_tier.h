// An in-memory NvmeTier for memory tests: the same copy-on-write contract as PageStoreNvmeTier
// (staged versions unreadable until commit), with a capacity in pages and optional per-I/O
// latency. Thread-safe (one mutex).
#pragma once

#include <chrono>
#include <cstring>
#include <future>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "memory/nvme_tier.h"

namespace strata::memory::testing {

class FakeNvmeTier final : public NvmeTier {
 public:
  FakeNvmeTier(uint64_t page_bytes, uint64_t capacity_pages, int latency_us = 0)
      : page_bytes_(page_bytes), capacity_pages_(capacity_pages), latency_us_(latency_us) {}

  uint64_t page_bytes() const override { return page_bytes_; }

  Status stage_write(PageId page, const void* buffer) override {
    sleep();
    std::lock_guard lock(mu_);
    if (staged_.count(page)) return Status::FailedPrecondition("page staged twice");
    if (committed_.size() + staged_.size() >= capacity_pages_ + (committed_.count(page) ? 1 : 0) &&
        !committed_.count(page)) {
      return Status::ResourceExhausted("fake nvme full");
    }
    open_.push_back(page);
    auto& bytes = staged_[page];
    bytes.assign(static_cast<const char*>(buffer), static_cast<const char*>(buffer) + page_bytes_);
    used_peak_ = std::max<uint64_t>(used_peak_, committed_.size() + staged_.size());
    return Status::Ok();
  }

  std::unique_ptr<NvmeBatch> seal() override {
    std::lock_guard lock(mu_);
    auto batch = std::make_unique<Batch>(std::move(open_));
    open_.clear();
    return batch;
  }

  Status commit(std::unique_ptr<NvmeBatch> batch) override {
    std::lock_guard lock(mu_);
    if (batch->pages().empty()) return Status::Ok();
    if (fail_next_commit_) {
      fail_next_commit_ = false;
      for (PageId p : batch->pages()) staged_.erase(p);
      return Status::IoError("injected commit failure");
    }
    for (PageId p : batch->pages()) {
      committed_[p] = std::move(staged_[p]);
      staged_.erase(p);
    }
    ++commits_;
    return Status::Ok();
  }

  std::future<Status> read(PageId page, void* buffer) override {
    sleep();
    std::promise<Status> p;
    std::lock_guard lock(mu_);
    auto it = committed_.find(page);
    if (it == committed_.end()) {
      p.set_value(Status::NotFound("page " + std::to_string(page) + " not on fake nvme"));
    } else {
      std::memcpy(buffer, it->second.data(), page_bytes_);
      p.set_value(Status::Ok());
    }
    return p.get_future();
  }

  std::vector<PageId> committed_pages() const override {
    std::lock_guard lock(mu_);
    std::vector<PageId> out;
    for (const auto& [page, bytes] : committed_) out.push_back(page);
    return out;
  }

  NvmeTierStats stats() const override {
    std::lock_guard lock(mu_);
    NvmeTierStats s;
    s.capacity_bytes = capacity_pages_ * page_bytes_;
    s.used_bytes = (committed_.size() + staged_.size()) * page_bytes_;
    s.peak_bytes = used_peak_ * page_bytes_;
    return s;
  }

  uint64_t commits() const {
    std::lock_guard lock(mu_);
    return commits_;
  }
  void fail_next_commit() {
    std::lock_guard lock(mu_);
    fail_next_commit_ = true;
  }

 private:
  struct Batch final : NvmeBatch {
    explicit Batch(std::vector<PageId> pages) { pages_ = std::move(pages); }
  };
  void sleep() const {
    if (latency_us_ > 0) std::this_thread::sleep_for(std::chrono::microseconds(latency_us_));
  }
  const uint64_t page_bytes_;
  const uint64_t capacity_pages_;
  const int latency_us_;
  mutable std::mutex mu_;
  std::unordered_map<PageId, std::vector<char>> committed_;
  std::unordered_map<PageId, std::vector<char>> staged_;
  std::vector<PageId> open_;  // pages staged since the last seal
  uint64_t used_peak_ = 0;
  uint64_t commits_ = 0;
  bool fail_next_commit_ = false;
};

}  // namespace strata::memory::testing
