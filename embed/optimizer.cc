#include "embed/optimizer.h"

#include <tbb/task_arena.h>

#include <cmath>
#include <cstring>

#include "core/kernels/adamw.h"
#include "embed/grad_sums.h"
#include "embed/runtime.h"

namespace strata::embed {
namespace {

constexpr uint8_t kOptimizerAcquirer = 1;  // its cursor in the host pool's plan

// The floats of `tensor` from float `begin` on, in the pinned page that holds them.
float* At(const memory::PageRef& ref, const Layout& layout, size_t tensor, uint64_t begin) {
  const uint64_t offset = layout.locate(tensor, begin * sizeof(float)).second;
  return reinterpret_cast<float*>(static_cast<char*>(ref.data()) + offset);
}

}  // namespace

Optimizer::Optimizer(Runtime* runtime, const Layout* layout, memory::MemoryManager* memory,
                     int threads, int64_t steps_done)
    : runtime_(runtime),
      layout_(layout),
      memory_(memory),
      threads_(threads),
      failed_(layout->units().size(), 0),
      steps_done_(steps_done) {}

Optimizer::~Optimizer() { (void)wait(); }

void Optimizer::start(const strata_step_options& options, std::vector<size_t> unit_order,
                      std::vector<double> sums, std::vector<char> fresh) {
  STRATA_CHECK(!thread_.joinable()) << "a step started while another runs";
  sums_ = std::move(sums);
  fresh_ = std::move(fresh);
  int64_t step;
  {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = Status::Ok();
    std::fill(failed_.begin(), failed_.end(), 0);
    step = steps_done_ + 1;
  }
  thread_ = std::thread(&Optimizer::run, this, options, std::move(unit_order), step);
}

Status Optimizer::wait() {
  if (thread_.joinable()) thread_.join();
  return last_status();
}

void Optimizer::run(strata_step_options options, std::vector<size_t> order, int64_t step) {
  tbb::task_arena arena(threads_ > 0 ? threads_ : tbb::task_arena::automatic);
  Status status;
  double norm = 0.0;
  float scale = 1.0f;
  if (options.max_grad_norm > 0) {
    arena.execute([&] { status = global_norm(order, &norm); });
    if (status.ok()) scale = kernels::clip_coefficient(norm, options.max_grad_norm);
  }
  size_t done = 0;
  for (; status.ok() && done < order.size(); ++done) {
    arena.execute([&] { status = update_unit(order[done], options, scale, step); });
    if (status.ok()) runtime_->finish_unit(order[done]);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (status.ok()) {
      steps_done_ = step;
      last_norm_ = norm;
    } else {
      status_ = status.with_context("strata_step " + std::to_string(step));
      for (size_t k = done == 0 ? 0 : done - 1; k < order.size(); ++k) failed_[order[k]] = 1;
    }
  }
  // A failed step still hands every remaining unit's pages back, unchanged.
  if (!status.ok()) {
    for (size_t k = done == 0 ? 0 : done - 1; k < order.size(); ++k) {
      runtime_->finish_unit(order[k]);
    }
  }
}

bool Optimizer::unit_is_stale(const UpdateUnit& unit) const {
  for (const Chunk& c : unit.chunks) {
    if (!fresh_[c.pair]) return true;
  }
  return false;
}

// Sums of squares per chunk, added in chunk order: the same bits whatever the unit order (the
// learned access order), the budgets, or whether a chunk's sum was measured at its release or
// here (Note [Norms at release]).
Status Optimizer::global_norm(const std::vector<size_t>& order, double* norm) {
  uint64_t reads = 0;
  for (size_t u : order) {
    const UpdateUnit& unit = layout_->units()[u];
    if (!unit_is_stale(unit)) continue;
    STRATA_ASSIGN_OR_RETURN(memory::PageRef grads,
                            memory_->acquire_sync(unit.pages[1], memory::Access::kRead,
                                                  {"strata_step norm", kOptimizerAcquirer}));
    ++reads;
    for (const Chunk& c : unit.chunks) {
      if (fresh_[c.pair]) continue;
      const size_t g = layout_->pairs()[c.pair].grad;
      sums_[c.id] = ChunkSumOfSquares(At(grads, *layout_, g, c.begin), c.end - c.begin);
    }
  }
  double total = 0.0;
  for (double s : sums_) total += s;
  *norm = std::sqrt(total);
  std::lock_guard<std::mutex> lock(mu_);
  norm_page_reads_ += reads;
  return Status::Ok();
}

// Whether the unit's chunks cover every tensor piece in its gradient page: then dropping the
// page drops exactly the consumed gradients.
static bool CoversGradientPage(const Layout& layout, const UpdateUnit& unit) {
  uint64_t covered = 0, held = 0;
  for (const Chunk& c : unit.chunks) covered += (c.end - c.begin) * sizeof(float);
  for (size_t t : layout.tensors_in(unit.pages[1])) held += layout.piece_in(t, unit.pages[1]).bytes;
  return covered == held;
}

Status Optimizer::update_unit(size_t u, const strata_step_options& o, float scale,
                              int64_t step) {
  const UpdateUnit& unit = layout_->units()[u];
  const memory::AcquireOptions who{"strata_step update", kOptimizerAcquirer};
  const bool zero_in_place = o.discard_grads && !CoversGradientPage(*layout_, unit);
  STRATA_ASSIGN_OR_RETURN(memory::PageRef p,
                          memory_->acquire_sync(unit.pages[0], memory::Access::kWrite, who));
  STRATA_ASSIGN_OR_RETURN(
      memory::PageRef g,
      memory_->acquire_sync(unit.pages[1],
                            zero_in_place ? memory::Access::kWrite : memory::Access::kRead, who));
  STRATA_ASSIGN_OR_RETURN(memory::PageRef m,
                          memory_->acquire_sync(unit.pages[2], memory::Access::kWrite, who));
  STRATA_ASSIGN_OR_RETURN(memory::PageRef v,
                          memory_->acquire_sync(unit.pages[3], memory::Access::kWrite, who));
  for (const Chunk& c : unit.chunks) {
    const Pair& pair = layout_->pairs()[c.pair];
    kernels::AdamWParams hp{o.lr, o.beta1, o.beta2, o.eps, pair.weight_decay, long(step)};
    float* grad = At(g, *layout_, pair.grad, c.begin);
    kernels::adamw_update(At(p, *layout_, pair.param, c.begin), grad,
                          At(m, *layout_, pair.exp_avg, c.begin),
                          At(v, *layout_, pair.exp_avg_sq, c.begin), long(c.end - c.begin), hp,
                          scale);
    if (zero_in_place) std::memset(grad, 0, (c.end - c.begin) * sizeof(float));
  }
  p.release();
  g.release();
  m.release();
  v.release();
  if (o.discard_grads && !zero_in_place) return memory_->discard(unit.pages[1]);
  return Status::Ok();
}

bool Optimizer::unit_failed(size_t u) const {
  std::lock_guard<std::mutex> lock(mu_);
  return failed_[u] != 0;
}

Status Optimizer::last_status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

int64_t Optimizer::steps_done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return steps_done_;
}

uint64_t Optimizer::norm_page_reads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return norm_page_reads_;
}

double Optimizer::last_grad_norm() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_norm_;
}

}  // namespace strata::embed
