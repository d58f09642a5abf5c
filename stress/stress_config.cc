#include "stress/stress_config.h"

#include <cstdio>
#include <fstream>
#include <random>

#include "core/data/token_dataset.h"
#include "core/util/sizes.h"
#include "scheduler/memory_plan.h"
#include "scheduler/model_registry.h"
#include "scheduler/state_pages.h"
#include "stress/stress_disturbance.h"  // Uniform

namespace strata::stress {
namespace {

template <typename T>
T Pick(std::mt19937_64& rng, std::initializer_list<T> values) {
  std::uniform_int_distribution<size_t> d(0, values.size() - 1);
  return *(values.begin() + d(rng));
}

// The model the configuration's flags (CommonArgs) give, as `strata train` resolves them.
Result<std::unique_ptr<Model>> ModelOf(const StressConfig& c) {
  ModelChoice m;
  m.arch = c.arch;
  m.n_layer = c.n_layer;
  m.n_head = c.n_head;
  m.n_embd = c.n_embd;
  m.vocab_size = c.vocab;
  m.block_size = c.block_size;
  if (c.arch == "llama") {
    m.n_kv_head = c.n_kv_head;
    m.ffn_dim = c.ffn_dim;
    m.tie_embeddings = c.tie_embeddings;
  }
  return ResolveModel(m);
}

// The planner's input for the configuration; `model` and `pages` must outlive it.
scheduler::MemoryPlanInput PlanInput(const StressConfig& c, const Model& model,
                                     const scheduler::StatePages& pages) {
  scheduler::MemoryPlanInput in;
  in.model = &model;
  in.layout = &model.layout();
  in.micro_rows = c.micro_batch > 0 ? c.micro_batch : c.batch;
  in.batch = c.batch;
  in.seq = c.seq;
  in.gpu_mem = c.gpu_mem;
  in.host_mem = c.host_mem;
  in.has_nvme = true;
  in.page_bytes = c.page_bytes;
  in.param_pages = pages.pages_of_role(memory::Role::kParam);
  in.grad_pages = pages.pages_of_role(memory::Role::kGrad);
  in.moment_pages =
      pages.pages_of_role(memory::Role::kAdamM) + pages.pages_of_role(memory::Role::kAdamV);
  in.params_on = c.params_on;
  in.optimizer_on = c.optimizer_on;
  in.recompute = c.recompute;
  in.micro_batch_order = c.micro_batch_order;
  return in;
}

void DrawModel(std::mt19937_64& rng, StressConfig* c) {
  c->arch = Pick<std::string>(rng, {"gpt2", "llama"});
  c->n_layer = int(Uniform(rng, 1, 3));
  c->n_embd = Pick(rng, {32, 48, 64, 96});
  c->n_head = Pick(rng, {1, 2, 4});  // head dimensions 8 to 96, even as rotary needs
  c->n_kv_head = Pick(rng, {1, 2, 4});
  while (c->n_head % c->n_kv_head != 0) c->n_kv_head /= 2;
  c->ffn_dim = c->n_embd * Pick(rng, {2, 3});
  c->tie_embeddings = Uniform(rng, 0, 1) == 1;
  c->vocab = Pick(rng, {64, 100, 128, 256});
  c->seq = Pick(rng, {16, 32, 48, 64});
  c->block_size = Pick(rng, {c->seq, 64});
  c->batch = Pick(rng, {1, 2, 4});
  const int micro = Pick(rng, {0, 1, 2});
  c->micro_batch = micro > 0 && c->batch % micro == 0 && micro < c->batch ? micro : 0;
  c->steps = Uniform(rng, 4, 8);
  c->builtin_data = c->vocab == 256 && Uniform(rng, 0, 1) == 0;
  c->lr = Pick<std::string>(rng, {"3e-4", "1e-3", "3e-3"});
  c->grad_clip = Pick<std::string>(rng, {"0", "1", "0.05"});
  c->warmup = Uniform(rng, 0, 2);
  c->lr_schedule = Pick<std::string>(rng, {"constant", "cosine"});
  c->init_seed = uint64_t(Uniform(rng, 1, 1 << 20));
}

// Budgets from generous (the default) down to near the planner's minimum.
void DrawPaging(std::mt19937_64& rng, StressConfig* c) {
  c->page_bytes = Pick<uint64_t>(rng, {4096, 8192, 16384, 32768, 65536});
  c->params_on = Pick<std::string>(rng, {"device", "host", "nvme", "auto"});
  c->optimizer_on = Pick<std::string>(rng, {"host", "nvme", "auto"});
  c->recompute = Pick<std::string>(rng, {"none", "all", "auto"});
  c->host_eviction = Pick<std::string>(rng, {"auto", "belady", "lru"});
  c->micro_batch_order =
      Pick<std::string>(rng, {"auto", "layer-major", "micro-batch-major"});
  c->nvme_dirs = int(Uniform(rng, 1, 2));
  c->ckpt_every = Uniform(rng, 1, 3);
  Result<std::unique_ptr<Model>> model = ModelOf(*c);
  if (!model.ok()) return;  // CheckPagedPlan reports it
  Result<scheduler::StatePages> pages =
      scheduler::StatePages::Make((*model)->layout(), c->page_bytes);
  if (!pages.ok()) return;
  const scheduler::MemoryPlanInput in = PlanInput(*c, **model, *pages);
  Result<uint64_t> min_device = scheduler::MinimalDeviceBytes(in);
  if (min_device.ok() && Uniform(rng, 0, 2) > 0) {
    c->gpu_mem = *min_device + *min_device * uint64_t(Uniform(rng, 0, 150)) / 100;
  }
  const uint64_t total = pages->num_pages();
  if (Uniform(rng, 0, 2) > 0 && total > scheduler::kHostWorkingPages + 1) {
    c->host_mem = uint64_t(Uniform(rng, long(scheduler::kHostWorkingPages) + 1, long(total))) *
                  c->page_bytes;
  }
}

}  // namespace

StressConfig DrawConfig(uint64_t seed, int index) {
  StressConfig c;
  c.index = index;
  std::seed_seq mix{uint32_t(seed), uint32_t(seed >> 32), uint32_t(index)};
  std::mt19937_64 rng(mix);
  c.seed = rng();
  DrawModel(rng, &c);
  DrawPaging(rng, &c);
  return c;
}

Status CheckPagedPlan(const StressConfig& c) {
  STRATA_ASSIGN_OR_RETURN(const std::unique_ptr<Model> model, ModelOf(c));
  STRATA_ASSIGN_OR_RETURN(scheduler::StatePages pages,
                          scheduler::StatePages::Make(model->layout(), c.page_bytes));
  return scheduler::MakeMemoryPlan(PlanInput(c, *model, pages)).status();
}

Status WriteTokenFile(const StressConfig& c, const std::string& path) {
  std::mt19937_64 rng(c.seed);
  const int32_t count = 8192;
  std::vector<int32_t> header(256, 0);
  header[0] = kTokenFileMagic;
  header[1] = kTokenFileVersion;
  header[2] = count;
  std::vector<uint16_t> tokens(count);
  for (uint16_t& t : tokens) t = uint16_t(Uniform(rng, 0, c.vocab - 1));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(header.data()), std::streamsize(header.size() * 4));
  out.write(reinterpret_cast<const char*>(tokens.data()), std::streamsize(tokens.size() * 2));
  out.flush();
  if (!out) return Status::FromErrno(errno, "writing the token file " + path);
  return Status::Ok();
}

std::vector<std::string> CommonArgs(const StressConfig& c, const std::string& data) {
  std::vector<std::string> a = {
      "train",         "--n-layer",    std::to_string(c.n_layer),
      "--n-head",      std::to_string(c.n_head), "--n-embd", std::to_string(c.n_embd),
      "--vocab",       std::to_string(c.vocab),  "--block-size", std::to_string(c.block_size),
      "--data",        c.builtin_data ? "builtin" : data,
      "--batch",       std::to_string(c.batch),  "--seq", std::to_string(c.seq),
      "--steps",       std::to_string(c.steps),  "--lr", c.lr,
      "--warmup",      std::to_string(c.warmup), "--lr-schedule", c.lr_schedule,
      "--grad-clip",   c.grad_clip,  "--seed", std::to_string(c.init_seed),
      "--threads",     "1",          "--log-level", "warn"};
  if (c.micro_batch > 0) {
    a.push_back("--micro-batch");
    a.push_back(std::to_string(c.micro_batch));
  }
  a.insert(a.end(), {"--arch", c.arch});
  if (c.arch == "llama") {
    a.insert(a.end(), {"--n-kv-head", std::to_string(c.n_kv_head), "--ffn-dim",
                       std::to_string(c.ffn_dim)});
    if (c.tie_embeddings) a.push_back("--tie-embeddings");
  }
  return a;
}

std::vector<std::string> NvmeDirs(const StressConfig& c, const std::string& dir) {
  std::vector<std::string> dirs;
  for (int i = 0; i < c.nvme_dirs; ++i) dirs.push_back(dir + "/nvme" + std::to_string(i));
  return dirs;
}

std::string CkptDir(const std::string& dir) { return dir + "/ckpt"; }

std::vector<std::string> PagingArgs(const StressConfig& c, const std::string& dir) {
  std::vector<std::string> a = {"--engine",       "paged",          "--page-size",
                                std::to_string(c.page_bytes), "--params-on", c.params_on,
                                "--optimizer-on", c.optimizer_on, "--recompute",
                                c.recompute,      "--host-eviction", c.host_eviction,
                                "--micro-batch-order", c.micro_batch_order,
                                "--ckpt-dir",     CkptDir(dir),  "--ckpt-every",
                                std::to_string(c.ckpt_every)};
  if (c.gpu_mem > 0) {
    a.push_back("--gpu-mem");
    a.push_back(std::to_string(c.gpu_mem));
  }
  if (c.host_mem > 0) {
    a.push_back("--host-mem");
    a.push_back(std::to_string(c.host_mem));
  }
  for (const std::string& d : NvmeDirs(c, dir)) {
    a.push_back("--nvme-dir");
    a.push_back(d);
  }
  return a;
}

std::string Describe(const StressConfig& c) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%s %dx%d h%d/%d vocab %d seq %d batch %d/%d steps %ld | page %s gpu %s host %s | params "
                "%s opt %s recompute %s %s %s | %d dir%s, ckpt every %ld | clip %s",
                c.arch == "llama" ? (c.tie_embeddings ? "llama-tied" : "llama") : "gpt2",
                c.n_layer, c.n_embd, c.n_head, c.arch == "llama" ? c.n_kv_head : c.n_head,
                c.vocab, c.seq, c.batch,
                c.micro_batch > 0 ? c.micro_batch : c.batch, c.steps,
                FormatBytes(c.page_bytes).c_str(),
                c.gpu_mem > 0 ? FormatBytes(c.gpu_mem).c_str() : "default",
                c.host_mem > 0 ? FormatBytes(c.host_mem).c_str() : "default", c.params_on.c_str(),
                c.optimizer_on.c_str(), c.recompute.c_str(), c.host_eviction.c_str(),
                c.micro_batch_order.c_str(), c.nvme_dirs,
                c.nvme_dirs > 1 ? "s" : "", c.ckpt_every, c.grad_clip.c_str());
  return buf;
}

}  // namespace strata::stress
