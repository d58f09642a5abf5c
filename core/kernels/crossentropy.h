#pragma once
#include <cstdint>
// Softmax + cross-entropy over the vocabulary, mean over the N = B*T tokens (torch's
// F.cross_entropy with reduction="mean").
namespace strata::kernels {
// probs (N, V) = softmax(logits); returns the mean loss, summed in double in a fixed order.
// targets (N) with 0 <= id < V.
float crossentropy_forward(float* probs, const float* logits, const int32_t* targets, int N, int V);
// dlogits (N, V) += (probs - onehot(target)) * dloss, where dloss is the gradient of the
// mean loss with respect to each token's loss (1/N for a plain mean).
void crossentropy_backward(float* dlogits, const float* probs, const int32_t* targets,
                           float dloss, int N, int V);
}  // namespace strata::kernels
