// A plugin whose op reports errors: CheckedSqrt(X) = sqrt(X) for a matrix X.
// Shape inference rejects any other rank; the kernel rejects negative
// elements, naming the first one. Written against the C ABI directly.
#include <cmath>
#include <cstdio>
#include <random>

#include "weir/plugin.h"

static int32_t infer(const WeirInferenceContext* ctx, char* error, size_t error_size) {
  const WeirTensorType& x = ctx->inputs[0];
  if (x.rank != 2) {
    std::snprintf(error, error_size, "CheckedSqrt expects a matrix, got rank %d", x.rank);
    return WEIR_STATUS_ERROR;
  }
  ctx->outputs[0] = x;
  return WEIR_STATUS_OK;
}

static int32_t compute(void*, WeirKernelContext* ctx, char* error, size_t error_size) {
  const WeirTensor& x = ctx->inputs[0];
  int64_t n = 1;
  for (int32_t i = 0; i < x.rank; ++i) n *= x.sizes[i];
  const float* in = static_cast<const float*>(x.data);
  for (int64_t i = 0; i < n; ++i) {
    if (in[i] < 0) {
      std::snprintf(error, error_size, "element %lld is negative (%g)", static_cast<long long>(i), in[i]);
      return WEIR_STATUS_ERROR;
    }
  }
  const WeirTensor* y = ctx->allocate_output(ctx->opaque, 0, x.dtype, x.rank, x.sizes);
  if (y == nullptr) return WEIR_STATUS_ERROR;
  float* out = static_cast<float*>(y->data);
  for (int64_t i = 0; i < n; ++i) out[i] = std::sqrt(in[i]);
  return WEIR_STATUS_OK;
}

// Noise(X) = X + fresh random noise on every run, but declared PURE: a lie
// that lets passes merge two Noise nodes, which `graph-runner verify` catches.
static int32_t noise(void*, WeirKernelContext* ctx, char*, size_t) {
  static std::random_device device;
  const WeirTensor& x = ctx->inputs[0];
  int64_t n = 1;
  for (int32_t i = 0; i < x.rank; ++i) n *= x.sizes[i];
  const WeirTensor* y = ctx->allocate_output(ctx->opaque, 0, x.dtype, x.rank, x.sizes);
  if (y == nullptr) return WEIR_STATUS_ERROR;
  for (int64_t i = 0; i < n; ++i) {
    static_cast<float*>(y->data)[i] = static_cast<const float*>(x.data)[i] + static_cast<float>(device() % 1000) / 100.0f;
  }
  return WEIR_STATUS_OK;
}

static const char* const inputs[] = {"X"};
static const char* const outputs[] = {"Y"};
static const WeirOpDef ops[] = {
    {sizeof(WeirOpDef), "CheckedSqrt", "", 1, inputs, 1, outputs, 0, nullptr, 0, nullptr, infer, nullptr, compute,
     nullptr, "sqrt of a non-negative matrix", WEIR_OP_FLAG_PURE},
    {sizeof(WeirOpDef), "Noise", "", 1, inputs, 1, outputs, 0, nullptr, 0, nullptr, nullptr, nullptr, noise, nullptr,
     "x plus random noise, falsely declared pure", WEIR_OP_FLAG_PURE}};
static const WeirPluginInfo info = {WEIR_PLUGIN_ABI_VERSION, sizeof(WeirPluginInfo), "checked_ops", 2, ops};

extern "C" WEIR_PLUGIN_EXPORT const WeirPluginInfo* weir_plugin_entry(void) { return &info; }
