// Runtime: creation, registration, sealing, steps, stats and closing. Acquires and releases
// are in runtime_acquire.cc; the NVMe store in runtime_store.cc; checkpoints in
// runtime_checkpoint.cc and checkpoint_book.cc.
#include "embed/runtime.h"

#include <algorithm>

#include "core/device/create_device.h"
#include "core/util/log.h"
#include "embed/checkpoint_book.h"
#include "embed/grad_sums.h"
#include "embed/optimizer.h"
#include "embed/state_limits.h"

namespace strata::embed {

Runtime::Runtime(const EmbedOptions& options) : options_(options), layout_(options.page_bytes) {}

Runtime::~Runtime() {
  if (optimizer_) (void)optimizer_->wait();
  for (Hold& h : holds_) {
    if (h.device_copy) device_->free(h.device_copy);
  }
  pins_.clear();  // every PageRef goes before the manager
  optimizer_.reset();
  memory_.reset();
}

Result<std::unique_ptr<Runtime>> Runtime::Create(const EmbedOptions& options) {
  // Strata's loggers are process-wide (spdlog's registry): an embedder hears warnings and
  // errors unless it asks for more.
  SetLogLevel(options.log_level);
  std::unique_ptr<Runtime> rt(new Runtime(options));
  SimDeviceOptions sim;
  sim.capacity_bytes = options.gpu_bytes;
  STRATA_ASSIGN_OR_RETURN(rt->device_, CreateDevice({options.device, 0}, sim));
  rt->copy_stream_ = rt->device_->create_stream("strata embed copies");
  if (!options.checkpoint_dir.empty()) {
    STRATA_ASSIGN_OR_RETURN(rt->book_, CheckpointBook::Open(options.checkpoint_dir));
  }
  STRATA_RETURN_IF_ERROR(rt->check_store());
  rt->layout_.set_limits(MakeStateLimits(options, rt->nvme_dirs()));  // Note [Sizes up front]
  return rt;
}

// Sealed once memory_ exists. A seal that failed after the layout was sealed (the NVMe store in
// use by another runtime, say) is tried again by the next call: nothing uses the pools before.
Status Runtime::seal(std::unique_lock<std::mutex>&) {
  if (closed_) return Status::FailedPrecondition("the runtime is closed");
  if (memory_) return Status::Ok();
  // The registrations were checked against the budgets (Note [Sizes up front]).
  if (!layout_.sealed()) STRATA_RETURN_IF_ERROR(layout_.seal());
  if (!resumed_.name.empty()) {
    STRATA_RETURN_IF_ERROR(CheckpointBook::CheckLayout(resumed_, layout_));
  }
  STRATA_RETURN_IF_ERROR(open_memory());
  memory::MemoryManagerOptions mo;
  mo.page_bytes = layout_.page_bytes();
  mo.num_pages = std::max<uint64_t>(layout_.num_pages(), 1);
  mo.host_bytes = options_.host_bytes;
  mo.device = device_.get();
  mo.nvme = nvme_.get();
  mo.stall_timeout_ms = options_.stall_timeout_ms;
  STRATA_ASSIGN_OR_RETURN(memory_, memory::MemoryManager::Create(mo));
  holds_.assign(layout_.tensors().size(), {});
  pins_ = std::vector<PagePin>(layout_.num_pages());
  pending_.assign(layout_.num_pages(), 0);
  dead_in_page_.assign(layout_.num_pages(), {});
  order_ = std::make_unique<AccessOrder>(&layout_, options_.host_bytes / 4);
  optimizer_ = std::make_unique<Optimizer>(this, &layout_, memory_.get(), options_.threads,
                                           resumed_.step);
  grad_sums_ = std::make_unique<GradSums>(&layout_);
  return Status::Ok();
}

Result<size_t> Runtime::register_tensor(TensorInfo info) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return Status::FailedPrecondition("the runtime is closed");
  return layout_.add(std::move(info));
}

Result<size_t> Runtime::find(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return Status::FailedPrecondition("the runtime is closed");
  return layout_.find(name);
}

Status Runtime::register_pair(size_t param, size_t grad, float weight_decay) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return Status::FailedPrecondition("the runtime is closed");
  if (layout_.sealed()) {
    return Status::FailedPrecondition(
        "strata_register_pair: the layout was sealed by the first acquire, prefetch, discard or "
        "step; register every pair before using any tensor");
  }
  return layout_.add_pair(param, grad, weight_decay);
}

Status Runtime::check_tensor(size_t tensor) {
  std::lock_guard<std::mutex> lock(mu_);
  if (tensor >= layout_.tensors().size()) {
    return Status::InvalidArgument("not a tensor handle of this runtime (" +
                                   std::to_string(layout_.tensors().size()) +
                                   " tensors are registered)");
  }
  return Status::Ok();
}

Status Runtime::check_no_holds(const char* what) const {
  for (size_t t = 0; t < holds_.size(); ++t) {
    if (holds_[t].writer || holds_[t].readers > 0) {
      return Status::FailedPrecondition(std::string(what) + ": tensor '" +
                                        layout_.tensor(t).name +
                                        "' is still acquired; release it first");
    }
  }
  return Status::Ok();
}

// Every pair's tensors and every page an update unit touches must be free: the optimizer takes
// those pages directly, and an embedder holding one while it waits for an update would wait on
// itself.
Status Runtime::check_step_ready() const {
  for (const Pair& p : layout_.pairs()) {
    for (size_t t : {p.param, p.grad}) {
      if (holds_[t].writer || holds_[t].readers > 0) {
        return Status::FailedPrecondition("strata_step: '" + layout_.tensor(t).name +
                                          "' is still acquired; release every parameter and "
                                          "gradient before the step");
      }
    }
  }
  for (const UpdateUnit& u : layout_.units()) {
    for (memory::PageId page : u.pages) {
      if (pins_[page].holds > 0 || pins_[page].pinning) {
        return Status::FailedPrecondition(
            "strata_step: a tensor sharing a page with parameter '" +
            layout_.tensor(layout_.pairs()[u.chunks[0].pair].param).name +
            "' (its group) is still acquired; release it before the step");
      }
    }
  }
  return Status::Ok();
}

Status Runtime::step(const strata_step_options& o) {
  if (!(o.lr >= 0) || !(o.beta1 >= 0 && o.beta1 < 1) || !(o.beta2 >= 0 && o.beta2 < 1) ||
      !(o.eps > 0) || !(o.max_grad_norm >= 0)) {
    return Status::InvalidArgument(
        "strata_step: lr must be >= 0, beta1 and beta2 in [0, 1), eps > 0 and max_grad_norm >= 0");
  }
  std::lock_guard<std::mutex> steps(step_mu_);
  std::unique_lock<std::mutex> lock(mu_);
  STRATA_RETURN_IF_ERROR(seal(lock));
  lock.unlock();
  // A failed step's error is returned by every later step and step_wait: its units were not
  // updated, so training cannot go on exactly.
  STRATA_RETURN_IF_ERROR(optimizer_->wait());
  lock.lock();
  STRATA_RETURN_IF_ERROR(materialize_dead(lock));  // may unlock: the checks come after it
  STRATA_RETURN_IF_ERROR(check_step_ready());
  std::vector<memory::PageId> to_prefetch;
  if (order_->end_iteration(to_prefetch)) set_plan();
  std::vector<size_t> order = unit_order();
  for (const UpdateUnit& u : layout_.units()) {
    for (memory::PageId page : u.pages) ++pending_[page];
  }
  optimizer_->start(o, std::move(order), grad_sums_->sums(), grad_sums_->fresh());
  if (o.discard_grads) grad_sums_->zero_all();  // the step leaves every gradient zero
  lock.unlock();
  issue_prefetches(to_prefetch);
  return Status::Ok();
}

// Units in the order their parameters were first acquired last iteration; the rest after.
std::vector<size_t> Runtime::unit_order() const {
  const size_t n = layout_.units().size();
  std::vector<size_t> first(n, SIZE_MAX);
  const auto& expected = order_->expected();
  for (size_t pos = 0; pos < expected.size(); ++pos) {
    const TensorInfo& t = layout_.tensor(expected[pos]);
    for (uint64_t i = 0; i < t.num_pages; ++i) {
      for (size_t u : layout_.units_of(t.page + i)) first[u] = std::min(first[u], pos);
    }
  }
  std::vector<size_t> order(n);
  for (size_t u = 0; u < n; ++u) order[u] = u;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return first[a] < first[b]; });
  return order;
}

// The host pool's Belady plan: the embedder's recorded order, then the optimizer's units.
void Runtime::set_plan() {
  std::vector<memory::PlannedAccess> plan;
  for (size_t t : order_->expected()) {
    const TensorInfo& info = layout_.tensor(t);
    for (uint64_t i = 0; i < info.num_pages; ++i) plan.push_back({info.page + i, 0});
  }
  for (size_t u : unit_order()) {
    for (memory::PageId page : layout_.units()[u].pages) plan.push_back({page, 1});
  }
  memory_->set_access_plan(std::move(plan));
}

void Runtime::finish_unit(size_t unit) {
  std::lock_guard<std::mutex> lock(mu_);
  for (memory::PageId page : layout_.units()[unit].pages) --pending_[page];
  cv_.notify_all();
}

Status Runtime::step_wait() {
  std::lock_guard<std::mutex> steps(step_mu_);
  return wait_for_step();
}

// Under step_mu_: the optimizer exists once the layout is sealed, and only one thread at a time
// starts or joins its step.
Status Runtime::wait_for_step() {
  Optimizer* optimizer;
  {
    std::lock_guard<std::mutex> lock(mu_);
    optimizer = optimizer_.get();
  }
  return optimizer ? optimizer->wait() : Status::Ok();
}

int64_t Runtime::step_count() {
  std::lock_guard<std::mutex> lock(mu_);
  return optimizer_ ? optimizer_->steps_done() : resumed_.step;
}

double Runtime::last_grad_norm() {
  std::lock_guard<std::mutex> lock(mu_);
  return optimizer_ ? optimizer_->last_grad_norm() : 0.0;
}

Status Runtime::close() {
  std::lock_guard<std::mutex> steps(step_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return Status::Ok();
    STRATA_RETURN_IF_ERROR(check_no_holds("strata_runtime_close"));
  }
  const Status step = wait_for_step();
  if (!step.ok()) Logger("embed")->warn("closing after a failed step: {}", step.to_string());
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  return Status::Ok();
}

strata_stats Runtime::stats() {
  strata_stats s{};
  const DeviceStats d = device_->stats();
  s.device_bytes = d.current_bytes;
  s.device_peak_bytes = d.peak_bytes;
  s.device_budget_bytes = d.capacity_bytes;
  s.host_to_device_bytes = d.h2d_bytes;
  s.device_to_host_bytes = d.d2h_bytes;
  s.host_budget_bytes = options_.host_bytes;
  std::lock_guard<std::mutex> lock(mu_);
  if (memory_) {
    const memory::MemoryStats m = memory_->stats();
    s.host_bytes = m.tier(memory::Tier::kHost).current_bytes;
    s.host_peak_bytes = m.tier(memory::Tier::kHost).peak_bytes;
    s.nvme_budget_bytes = m.tier(memory::Tier::kNvme).capacity_bytes;
    s.nvme_bytes = m.tier(memory::Tier::kNvme).current_bytes;
    s.nvme_peak_bytes = m.tier(memory::Tier::kNvme).peak_bytes;
    s.nvme_read_bytes = m.nvme_read_bytes;
    s.nvme_write_bytes = m.nvme_write_bytes;
    s.host_misses = m.misses;
  }
  if (optimizer_) s.norm_page_reads = optimizer_->norm_page_reads();
  s.stall_seconds = double(stall_ns_.load()) * 1e-9;
  s.acquires = acquires_;
  s.predicted_acquires = predicted_;
  s.unpredicted_acquires = unpredicted_;
  s.prefetches = prefetches_;
  s.steps = uint64_t(optimizer_ ? optimizer_->steps_done() : resumed_.step);
  s.tensors = layout_.tensors().size();
  s.pages = layout_.num_pages();
  s.page_bytes = layout_.page_bytes();
  return s;
}

}  // namespace strata::embed
