// The sim device's streams, events and link clocks (sim_stream.h).
#include "core/device/sim_stream.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "core/util/thread_name.h"

namespace strata {
namespace sim_internal {

Clock::time_point Link::reserve(uint64_t bytes, Clock::time_point ready) {
  std::lock_guard<std::mutex> lock(mu_);
  const double duration_ns = static_cast<double>(bytes) * ns_per_byte_ + carry_ns_;
  const auto whole_ns = static_cast<int64_t>(duration_ns);
  carry_ns_ = duration_ns - static_cast<double>(whole_ns);  // keep the sub-ns residue
  free_at_ = std::max(free_at_, ready) + std::chrono::nanoseconds(whole_ns);
  return free_at_;
}

void Fence::signal() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
}

void Fence::wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_; });
}

bool Fence::query() {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

StreamCore::StreamCore(std::string name) : name_(std::move(name)) {
  worker_ = std::thread([this] {
    SetThreadName("sim:" + name_);
    run_worker();
  });
}

void StreamCore::enqueue(Op op) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    STRATA_CHECK(!stop_) << "enqueue on stream '" << name_ << "' after shutdown";
    op.enqueued = Clock::now();
    queue_.push_back(std::move(op));
    ++submitted_;
  }
  work_cv_.notify_one();
}

Status StreamCore::synchronize() {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t target = submitted_;
  done_cv_.wait(lock, [&] { return completed_ >= target; });
  return error_;
}

void StreamCore::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_one();
  if (worker_.joinable()) worker_.join();
}

void StreamCore::run_worker() {
  for (;;) {
    Op op;
    bool skip = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ and drained
      op = std::move(queue_.front());
      queue_.pop_front();
      skip = !error_.ok() && op.skip_after_error;
    }
    Clock::time_point done{};
    Status status = skip ? Status::Ok() : op.run(std::max(op.enqueued, last_done_), done);
    last_done_ = done == Clock::time_point{} ? Clock::now() : done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!status.ok() && error_.ok()) error_ = status.with_context("stream '" + name_ + "'");
      ++completed_;
    }
    done_cv_.notify_all();
  }
}

}  // namespace sim_internal

using sim_internal::Clock;
using sim_internal::Fence;
using sim_internal::Op;

void SimEvent::synchronize() {
  if (auto fence = latest()) fence->wait();
}

bool SimEvent::query() {
  auto fence = latest();
  return !fence || fence->query();
}

std::shared_ptr<Fence> SimEvent::start_recording() {
  auto fence = std::make_shared<Fence>();
  std::lock_guard<std::mutex> lock(mu_);
  latest_ = fence;
  return fence;
}

std::shared_ptr<Fence> SimEvent::latest() {
  std::lock_guard<std::mutex> lock(mu_);
  return latest_;
}

SimStream::~SimStream() {
  core_->shutdown();
  device_->release_stream(core_.get());
}

void SimStream::launch(std::function<void()> fn) {
  Op op;
  op.run = [fn = std::move(fn)](Clock::time_point, Clock::time_point&) -> Status {
    try {
      fn();
    } catch (const std::exception& e) {
      return Status::Internal(std::string("launched function threw: ") + e.what());
    } catch (...) {
      return Status::Internal("launched function threw a non-std exception");
    }
    return Status::Ok();
  };
  core_->enqueue(std::move(op));
}

void SimStream::record(Event& event) {
  auto fence = as_sim(event).start_recording();
  Op op;
  op.run = [fence](Clock::time_point, Clock::time_point&) {
    fence->signal();
    return Status::Ok();
  };
  op.skip_after_error = false;
  core_->enqueue(std::move(op));
}

void SimStream::wait(Event& event) {
  auto fence = as_sim(event).latest();
  if (!fence) return;  // never recorded: complete
  Op op;
  op.run = [fence](Clock::time_point, Clock::time_point&) {
    fence->wait();
    return Status::Ok();
  };
  op.skip_after_error = false;
  core_->enqueue(std::move(op));
}

SimEvent& SimStream::as_sim(Event& event) {
  auto* sim = dynamic_cast<SimEvent*>(&event);
  STRATA_CHECK(sim != nullptr) << "an Event of another backend used on a sim stream";
  return *sim;
}

}  // namespace strata
