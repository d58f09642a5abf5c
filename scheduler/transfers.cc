#include "scheduler/transfers.h"

#include <utility>

namespace strata::scheduler {

using memory::Access;
using memory::PageId;
using memory::PageRef;
using memory::Role;

std::shared_ptr<Event> RecordOn(Device& device, Stream& stream) {
  std::shared_ptr<Event> ev = device.create_event();
  stream.record(*ev);
  return ev;
}

void EnqueueTimed(Timeline& timeline, Stream& stream, Queue queue, std::string name, uint64_t bytes,
                  long step, const std::function<void()>& enqueue) {
  auto t0 = std::make_shared<int64_t>(0);
  Timeline* tl = &timeline;
  stream.launch([t0, tl] { *t0 = tl->now_ns(); });
  enqueue();
  stream.launch([t0, tl, queue, name = std::move(name), bytes, step] {
    tl->add(Slice{queue, name, *t0, tl->now_ns(), bytes, step});
  });
}

namespace {

uint64_t PieceBytes(const std::vector<Piece>& pieces) {
  uint64_t bytes = 0;
  for (const Piece& p : pieces) bytes += p.bytes;
  return bytes;
}

std::string PageLabel(const char* what, int block, size_t k) {
  return std::string(what) + " b" + std::to_string(block) + " p" + std::to_string(k);
}

}  // namespace

Transfers::Transfers(const StatePages& pages, HostPages& host, Device& device, Timeline& timeline,
                     const SplitPlan* split)
    : sp_(pages), split_(split), host_(host), device_(device), timeline_(timeline) {
  h2d_ = device_.create_stream("h2d");
  d2h_ = device_.create_stream("d2h");
  d2h_first_ = device_.create_stream("d2h first");
}

Transfers::~Transfers() {
  h2d_.reset();
  d2h_.reset();
  d2h_first_.reset();
}

uint64_t Transfers::slot_offset(int block, Role role, const Piece& p) const {
  if (role != Role::kParam || split_ == nullptr || !split_->split(block)) return p.block_offset;
  return uint64_t(split_->param_slot_offset(block, p.tensor, int64_t(p.block_offset / 4))) * 4;
}

Status Transfers::upload_page(PageRef ref, int block, Role role, size_t k, float* dst,
                             Stream& stream, Queue queue, long step) {
  const auto& pieces = sp_.pieces(block, role, k);
  auto held = std::make_shared<PageRef>(std::move(ref));
  Status st;
  EnqueueTimed(timeline_, stream, queue, PageLabel(memory::RoleName(role), block, k),
               PieceBytes(pieces), step, [&] {
                 const char* src = static_cast<const char*>(held->data());
                 char* to = reinterpret_cast<char*>(dst);
                 for (const Piece& p : pieces) {
                   if (!st.ok()) break;
                   st = device_.copy_async(to + slot_offset(block, role, p),
                                           src + p.page_offset, p.bytes,
                                           CopyKind::kHostToDevice, stream);
                 }
                 stream.launch([held] { held->release(); });  // the pin ends once copies ran
               });
  return st;
}

Result<std::shared_ptr<Event>> Transfers::load(
    float* dst, int block, Role role, const std::shared_ptr<Event>& after,
    const std::vector<std::shared_future<Status>>& wait_pages, long step) {
  if (after) h2d_->wait(*after);
  const auto& pages = sp_.pages(block, role);
  for (PageId p : pages) host_.prefetch(p);
  const std::string holder = "load block " + std::to_string(block) + " " + memory::RoleName(role);
  for (size_t k = 0; k < pages.size(); ++k) {
    if (k < wait_pages.size()) {
      STRATA_RETURN_IF_ERROR(
          wait_pages[k].get().with_context("optimizer update of block " + std::to_string(block)));
    }
    const int64_t t0 = timeline_.now_ns();
    STRATA_ASSIGN_OR_RETURN(
        PageRef ref, host_.acquire(pages[k], Access::kRead, Acquirer::kDriver, holder, step));
    timeline_.add(Slice{Queue::kFetch, "page " + std::to_string(pages[k]), t0, timeline_.now_ns(),
                        sp_.page_bytes(), step});
    STRATA_RETURN_IF_ERROR(
        upload_page(std::move(ref), block, role, k, dst, *h2d_, Queue::kH2D, step));
  }
  return RecordOn(device_, *h2d_);
}

Result<std::vector<std::shared_ptr<Event>>> Transfers::copy_grad_down(
    const float* src, int block, const std::shared_ptr<Event>& after, long step) {
  // Note [Gradient order].
  Stream& d2h = block == 0 ? *d2h_first_ : *d2h_;
  const Queue queue = block == 0 ? Queue::kD2HFirst : Queue::kD2H;
  d2h.wait(*after);
  const auto& pages = sp_.pages(block, Role::kGrad);
  std::vector<std::shared_ptr<Event>> page_ready;
  const std::string holder = "grad block " + std::to_string(block);
  for (size_t k = 0; k < pages.size(); ++k) {
    const int64_t t0 = timeline_.now_ns();
    STRATA_ASSIGN_OR_RETURN(
        PageRef ref, host_.acquire(pages[k], Access::kOverwrite, Acquirer::kDriver, holder, step));
    timeline_.add(Slice{Queue::kFetch, "grad page " + std::to_string(pages[k]), t0,
                        timeline_.now_ns(), 0, step});
    const auto& pieces = sp_.pieces(block, Role::kGrad, k);
    auto held = std::make_shared<PageRef>(std::move(ref));
    Status st;
    EnqueueTimed(timeline_, d2h, queue, PageLabel("grad", block, k), PieceBytes(pieces), step, [&] {
      char* to = static_cast<char*>(held->data());
      const char* from = reinterpret_cast<const char*>(src);
      for (const Piece& p : pieces) {
        if (!st.ok()) break;
        st = device_.copy_async(to + p.page_offset, from + p.block_offset, p.bytes,
                                CopyKind::kDeviceToHost, d2h);
      }
      d2h.launch([held] { held->release(); });
    });
    STRATA_RETURN_IF_ERROR(st);
    page_ready.push_back(RecordOn(device_, d2h));
  }
  return page_ready;
}

Status Transfers::synchronize_d2h() {
  STRATA_RETURN_IF_ERROR(d2h_->synchronize().with_context("d2h stream"));
  return d2h_first_->synchronize().with_context("d2h stream");
}

Status Transfers::synchronize() {
  Status first = h2d_->synchronize();
  for (Stream* d2h : {d2h_.get(), d2h_first_.get()}) {
    Status st = d2h->synchronize();
    if (first.ok()) first = st;
  }
  return first;
}

}  // namespace strata::scheduler
