#include "scheduler/in_memory_budget.h"

#include <algorithm>
#include <string>

#include "core/device/device.h"
#include "core/util/machine_memory.h"
#include "core/util/option.h"
#include "core/util/sizes.h"
#include "scheduler/machine_fit.h"

namespace strata {

// Params, grads, m, v, activations for one micro-batch (with the dres of each micro-batch of
// this rank), the step's tokens, alignment slack; under dp, the embedding's own gradient part
// (Note [Data-parallel gradients]).
int64_t InMemoryActivationFloats(const Model& m, int B, int T, int M) {
  const int64_t residual = ResidualFloats(m.shape(), B, T);
  return residual + int64_t(m.shape().n_layer) * m.layer_acts_floats(B, T) +
         m.head_acts_floats(B, T) + m.scratch_floats(B, T) + int64_t(M) * residual;
}

uint64_t InMemoryDeviceBytes(const TrainOptions& o, const Model& m, int T) {
  const int ranks = std::max(o.grid.dp, 1);
  const int B = o.data.micro_batch > 0 ? o.data.micro_batch : o.data.batch / ranks;
  const ModelLayout& layout = m.layout();
  const int64_t P = layout.total_numel;
  const uint64_t acts = uint64_t(InMemoryActivationFloats(m, B, T, o.data.batch / B / ranks)) * 4;
  const uint64_t embedding_part = ranks > 1 ? uint64_t(layout.embedding().numel) * 4 : 0;
  const uint64_t constants = uint64_t(m.constants(T).size()) * 4;
  return uint64_t(P) * 4 * 4 + acts + embedding_part + constants +
         uint64_t(2) * o.data.batch * T * 4 + 16 * kDeviceAlignment;
}

// The in-memory trainer's state and activations on the sim device live in this machine's RAM:
// refused before the arena is mapped when they cannot fit.
Status CheckInMemoryFitsMachine(const TrainOptions& o, const Model& m, int T) {
  if (o.device != "sim") return Status::Ok();
  RamNeed need;
  need.device_bytes = InMemoryDeviceBytes(o, m, T);
  if (!o.model.init_path.empty()) need.staging_bytes = uint64_t(m.shape().num_params) * 4;
  return CheckFitsMachine(
      need, ReadMachineMemory(),
      "training " + m.shape().description + " in memory with " + Mention(Option::kBatch) + " " +
          std::to_string(o.data.batch) + " " + Mention(Option::kSeq) + " " + std::to_string(T),
      "page the state instead: give " + Mention(Option::kGpuMem) + ", " +
          Mention(Option::kHostMem) + " and " + Mention(Option::kNvmeDir) + " (e.g. " +
          Mention(Option::kGpuMem) + " 2G " + Mention(Option::kHostMem) + " 4G " +
          Mention(Option::kNvmeDir) + " DIR), or lower " + Mention(Option::kBatch) + "/" +
          Mention(Option::kSeq) + " or the model");
}

Result<uint64_t> InMemoryDeviceBudget(const TrainOptions& o, const Model& m, int micro_rows,
                                      int T) {
  const uint64_t need_bytes = InMemoryDeviceBytes(o, m, T);
  const uint64_t capacity = o.budgets.gpu_mem ? o.budgets.gpu_mem : need_bytes;
  if (capacity >= need_bytes) return capacity;
  return ShortOfBytes(
      Option::kGpuMem,
      Status::ResourceExhausted(
          Mention(Option::kGpuMem) + " " + FormatBytes(capacity) + " is below the " +
          FormatBytes(need_bytes) + " that training " + m.shape().description + " in memory with " +
          Mention(Option::kBatch) + " " + std::to_string(micro_rows) + " " +
          Mention(Option::kSeq) + " " + std::to_string(T) + " needs; raise " +
          Mention(Option::kGpuMem) + " or lower " + Mention(Option::kBatch) + "/" +
          Mention(Option::kSeq)),
      capacity, need_bytes);
}

}  // namespace strata
