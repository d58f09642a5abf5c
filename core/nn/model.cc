#include "core/nn/model.h"

#include "core/util/check.h"
#include "core/util/log.h"

namespace strata {

Status Model::import_weights(const std::string& path, float* values) const {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<WeightReader> reader, open_weights(path));
  const ModelLayout& l = layout();
  for (int b = 0; b < l.num_blocks(); ++b) {
    STRATA_RETURN_IF_ERROR(reader->read_block(b, values + l.block_offset[b]));
  }
  Logger("train")->info("{}", reader->summary());
  return Status::Ok();
}

Status Model::export_weights(const std::string& path, const float* values) const {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<WeightWriter> writer, create_weights(path));
  const ModelLayout& l = layout();
  for (int b = 0; b < l.num_blocks(); ++b) {
    STRATA_RETURN_IF_ERROR(writer->write_block(b, values + l.block_offset[b]));
  }
  return writer->commit();
}

void Model::layer_forward_split(const KernelTable&, const OpShape&, int, const SplitWeights&,
                                const float*, float*) const {
  STRATA_CHECK(false) << shape().arch << " has no split operators (splits_layers)";
}

void Model::layer_backward_split(const KernelTable&, const OpShape&, int, const SplitWeights&,
                                 float*, const float*, float*, float*, float*, bool) const {
  STRATA_CHECK(false) << shape().arch << " has no split operators (splits_layers)";
}

const TpGroup* TpGroupOf(const OpShape& s, int tp) {
  if (tp == 1) return nullptr;
  STRATA_CHECK(s.tp != nullptr && s.tp->size == tp)
      << "a tensor-parallel rank's model of tp " << tp << " runs in a group of that size";
  return s.tp;
}

}  // namespace strata
