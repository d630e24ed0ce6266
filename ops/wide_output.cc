#include "ops/wide_output.h"

#include <climits>
#include <optional>
#include <string>

#include "ops/kernel.h"

namespace weir {

namespace {

// The dtype `code` asks for given `input`, or nullopt when it is neither 0
// nor a dtype can_widen accepts.
std::optional<DType> requested(int64_t code, DType input) {
  if (code == 0) return input;
  if (code < 0 || code > INT32_MAX || !is_valid_dtype(static_cast<int32_t>(code))) return std::nullopt;
  DType output = static_cast<DType>(code);
  if (input == DType::kUndefined || can_widen(input, output)) return output;
  return std::nullopt;
}

std::string refusal(int64_t code, DType input) {
  std::string named = code > 0 && code <= INT32_MAX && is_valid_dtype(static_cast<int32_t>(code))
                          ? std::string(dtype_name(static_cast<DType>(code)))
                          : "code " + std::to_string(code);
  return std::string(kOutputDtypeAttr) + " " + named + " is not one this op can write from " +
         std::string(dtype_name(input)) + " inputs (the same dtype, or f32 from bf16/f16)";
}

}  // namespace

bool can_widen(DType input, DType output) {
  return output == input ||
         (output == DType::kFloat32 && (input == DType::kBFloat16 || input == DType::kFloat16));
}

DType inferred_output_dtype(InferenceContext& ctx, DType input) {
  int64_t code = ctx.has_attr(kOutputDtypeAttr) ? ctx.attr_int(kOutputDtypeAttr) : 0;
  std::optional<DType> output = requested(code, input);
  if (!output) ctx.fail(refusal(code, input));
  return *output;
}

DType kernel_output_dtype(const KernelContext& ctx, DType input) {
  const Node& node = ctx.node();
  int64_t code = node.has_attr(kOutputDtypeAttr) ? node.attr(kOutputDtypeAttr).i() : 0;
  std::optional<DType> output = requested(code, input);
  if (!output) ctx.fail(refusal(code, input));
  return *output;
}

}  // namespace weir
