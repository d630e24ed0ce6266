#include "ops/tensor/pad.h"

#include <cstring>

#include "core/error.h"
#include "core/graph.h"
#include "ops/dtype_dispatch.h"
#include "ops/dtype_sets.h"
#include "ops/shape_inference.h"
#include "ops/tensor/indexing.h"

namespace weir {

namespace {

enum class PadMode { kConstant, kEdge, kReflect, kWrap };

std::string mode_name(const Node& node) { return node.has_attr("mode") ? node.attr("mode").s() : "constant"; }

std::optional<PadMode> parse_mode(const std::string& name) {
  if (name == "constant") return PadMode::kConstant;
  if (name == "edge") return PadMode::kEdge;
  if (name == "reflect") return PadMode::kReflect;
  if (name == "wrap") return PadMode::kWrap;
  return std::nullopt;
}

// Begin and end pads per axis of a rank-`rank` tensor, from `pads` over
// `axes` (all axes when absent). Calls fail on a malformed pair.
struct AxisPads {
  std::vector<int64_t> begin, end;
};

AxisPads resolve_pads(int64_t rank, const std::vector<int64_t>& pads, const std::vector<int64_t>* axes, const FailFn& fail) {
  std::vector<int64_t> all_axes;
  if (axes == nullptr) {
    for (int64_t a = 0; a < rank; ++a) all_axes.push_back(a);
    axes = &all_axes;
  }
  if (pads.size() != 2 * axes->size()) {
    fail("pads " + format_sizes(pads) + " needs " + std::to_string(2 * axes->size()) + " values (begin and end for " +
         std::to_string(axes->size()) + " axes)");
  }
  AxisPads result{std::vector<int64_t>(static_cast<size_t>(rank), 0), std::vector<int64_t>(static_cast<size_t>(rank), 0)};
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < axes->size(); ++i) {
    int64_t axis = (*axes)[i];
    if (axis < -rank || axis >= rank) fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    auto a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    if (seen[a]) fail("axis " + std::to_string(axis) + " is listed twice");
    seen[a] = true;
    result.begin[a] = pads[i];
    result.end[a] = pads[i + axes->size()];
  }
  return result;
}

// An axis of `size` padded by `begin` and `end` (negative crops); the pads
// come from a model, so the sum is checked for overflow and for going
// below 0.
int64_t padded_size(int64_t size, int64_t begin, int64_t end, size_t axis, const std::vector<int64_t>& pads,
                    const std::string& type, const FailFn& fail) {
  int64_t out = 0;
  if (__builtin_add_overflow(size, begin, &out) || __builtin_add_overflow(out, end, &out)) {
    fail("pads " + format_sizes(pads) + " overflow axis " + std::to_string(axis) + " of " + type);
  }
  if (out < 0) fail("pads " + format_sizes(pads) + " crop axis " + std::to_string(axis) + " of " + type + " below 0");
  return out;
}

void infer_pad(InferenceContext& ctx) {
  if (!parse_mode(mode_name(ctx.node()))) {
    ctx.fail("mode '" + mode_name(ctx.node()) + "' is not one of constant, edge, reflect, wrap");
  }
  const TensorType* data = ctx.input_type(0);
  if (data == nullptr) return;
  if (!data->shape.has_rank()) {
    ctx.set_output_type(0, {data->dtype, Shape::unknown_rank()});
    return;
  }
  int64_t rank = data->shape.rank();
  std::vector<Dim> dims(static_cast<size_t>(rank));
  for (size_t a = 0; a < dims.size(); ++a) dims[a] = symbolic_dim(ctx, a);
  auto pads = constant_ints(ctx, 1);
  bool has_axes = ctx.num_inputs() > 3 && ctx.input_type(3) != nullptr;
  auto axes = has_axes ? constant_ints(ctx, 3) : std::nullopt;
  if (pads && (!has_axes || axes)) {
    AxisPads resolved = resolve_pads(rank, *pads, axes ? &*axes : nullptr, [&](const std::string& m) { ctx.fail(m); });
    for (size_t a = 0; a < dims.size(); ++a) {
      const Dim& d = data->shape[a];
      if (resolved.begin[a] == 0 && resolved.end[a] == 0) {
        dims[a] = d;
      } else if (d.is_static()) {
        dims[a] = Dim(padded_size(d.size(), resolved.begin[a], resolved.end[a], a, *pads, data->shape.to_string(),
                                  [&](const std::string& m) { ctx.fail(m); }));
      }
    }
  }
  ctx.set_output_type(0, {data->dtype, Shape(std::move(dims))});
}

// For every output coordinate of one axis, the input coordinate it copies,
// or -1 for the constant.
std::vector<int64_t> source_table(int64_t n, int64_t begin, int64_t out_size, PadMode mode) {
  std::vector<int64_t> table(static_cast<size_t>(out_size));
  for (int64_t c = 0; c < out_size; ++c) {
    int64_t x = c - begin;
    if (x < 0 || x >= n) {
      switch (mode) {
        case PadMode::kConstant: x = -1; break;
        case PadMode::kEdge: x = x < 0 ? 0 : n - 1; break;
        case PadMode::kWrap: x = ((x % n) + n) % n; break;
        case PadMode::kReflect:
          if (n == 1) {
            x = 0;
          } else {
            int64_t period = 2 * (n - 1);
            x = ((x % period) + period) % period;
            if (x >= n) x = period - x;
          }
          break;
      }
    }
    table[static_cast<size_t>(c)] = x;
  }
  return table;
}

// Pad(data, pads, constant_value?, axes?) and PadGrad(dY, data, pads, axes?).
class PadKernel final : public OpKernel {
 public:
  PadKernel(const Node& node, bool gradient) : gradient_(gradient) {
    auto mode = parse_mode(mode_name(node));
    if (!mode) {
      throw Error(ErrorKind::kInvalidArgument, node.op_type() + " '" + node.name() + "': mode '" + mode_name(node) +
                                                   "' is not one of constant, edge, reflect, wrap").with_node(node.name());
    }
    mode_ = *mode;
  }

  void compute(KernelContext& ctx) override {
    size_t first = gradient_ ? 1 : 0;
    const Tensor& data = ctx.input(first);
    std::vector<int64_t> pads = index_values(ctx, ctx.input(first + 1), "pads");
    const size_t axes_input = 3;  // Pad: (data, pads, value, axes); PadGrad: (dY, data, pads, axes)
    std::optional<std::vector<int64_t>> axes;
    if (ctx.has_input(axes_input)) axes = index_values(ctx, ctx.input(axes_input), "axes");
    const std::vector<int64_t>& sizes = data.sizes();
    AxisPads resolved = resolve_pads(static_cast<int64_t>(sizes.size()), pads, axes ? &*axes : nullptr,
                                     [&](const std::string& m) { ctx.fail(m); });
    std::vector<int64_t> out_sizes(sizes.size());
    std::vector<std::vector<int64_t>> tables(sizes.size());
    for (size_t a = 0; a < sizes.size(); ++a) {
      out_sizes[a] = padded_size(sizes[a], resolved.begin[a], resolved.end[a], a, pads, data.type_string(),
                                 [&](const std::string& m) { ctx.fail(m); });
      if (sizes[a] == 0 && out_sizes[a] > 0 && mode_ != PadMode::kConstant) {
        ctx.fail("cannot pad the empty axis " + std::to_string(a) + " of " + data.type_string() + " in mode " + mode_name(ctx.node()));
      }
      tables[a] = source_table(sizes[a], resolved.begin[a], out_sizes[a], mode_);
    }
    std::vector<int64_t> strides(sizes.size(), 1);
    for (size_t a = sizes.size(); a-- > 1;) strides[a - 1] = strides[a] * sizes[a];
    if (!gradient_) {
      forward(ctx, data, out_sizes, tables, strides);
      return;
    }
    const Tensor& dy = ctx.input(0);
    if (dy.sizes() != out_sizes) ctx.fail("dY " + dy.type_string() + " does not match the padded shape " + format_sizes(out_sizes));
    Tensor& dx = ctx.allocate_output(0, dy.dtype(), sizes, KernelContext::Fill::kZeros);
    dispatch_dtype(dy.dtype(), [&]<typename T>() {
      if constexpr (!std::is_same_v<T, bool>) {
        const T* g = dy.data<T>();
        T* out = dx.data<T>();
        for_each_source(out_sizes, tables, strides, [&](int64_t flat, int64_t source) {
          if (source >= 0) out[source] = store<T>(load(out[source]) + load(g[flat]));
        });
      }
    });
  }

 private:
  void forward(KernelContext& ctx, const Tensor& data, const std::vector<int64_t>& out_sizes,
               const std::vector<std::vector<int64_t>>& tables, const std::vector<int64_t>& strides) const {
    size_t element = dtype_size(data.dtype());
    std::vector<char> fill(element, 0);
    if (ctx.has_input(2) && ctx.input(2).num_elements() > 0) {
      const Tensor& value = ctx.input(2);
      if (value.dtype() != data.dtype() || value.num_elements() != 1) {
        ctx.fail("constant_value must be one element of data's dtype " + std::string(dtype_name(data.dtype())) + ", got " +
                 value.type_string());
      }
      std::memcpy(fill.data(), value.raw_data(), element);
    }
    Tensor& out = ctx.allocate_output(0, data.dtype(), out_sizes, KernelContext::Fill::kUninitialized);
    const auto* src = static_cast<const char*>(data.raw_data());
    auto* dst = static_cast<char*>(out.raw_data());
    for_each_source(out_sizes, tables, strides, [&](int64_t flat, int64_t source) {
      std::memcpy(dst + static_cast<size_t>(flat) * element,
                  source >= 0 ? src + static_cast<size_t>(source) * element : fill.data(), element);
    });
  }

  // Calls visit(out_flat, source_offset or -1) for every output element in order.
  template <typename Visit>
  static void for_each_source(const std::vector<int64_t>& out_sizes, const std::vector<std::vector<int64_t>>& tables,
                              const std::vector<int64_t>& strides, Visit visit) {
    int64_t total = 1;
    for (int64_t size : out_sizes) total *= size;
    std::vector<int64_t> index(out_sizes.size(), 0);
    for (int64_t flat = 0; flat < total; ++flat) {
      int64_t source = 0;
      for (size_t a = 0; a < index.size() && source >= 0; ++a) {
        int64_t x = tables[a][static_cast<size_t>(index[a])];
        source = x < 0 ? -1 : source + x * strides[a];
      }
      visit(flat, source);
      for (size_t a = index.size(); a-- > 0;) {
        if (++index[a] < out_sizes[a]) break;
        index[a] = 0;
      }
    }
  }

  bool gradient_;
  PadMode mode_ = PadMode::kConstant;
};


}  // namespace

void register_pad_schemas(OpRegistry& registry) {
  OpSchema pad("Pad");
  pad.input("data", "T").input("pads", "I").input("constant_value", "T", Arity::kOptional)
      .input("axes", "I", Arity::kOptional).output("output", "T")
      .type_constraint("T", kAnyDTypes).type_constraint("I", {DType::kInt64, DType::kInt32})
      .attr("mode", AttrType::kString, Attribute(std::string("constant")))
      .infer(infer_pad)
      .gradient([](GradientContext& ctx) {
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        const Node& node = ctx.node();
        std::vector<Value*> inputs = {grad, node.input(0), node.input(1)};
        if (node.num_inputs() > 3 && node.input(3) != nullptr) inputs.push_back(node.input(3));
        std::map<std::string, Attribute> attributes;
        if (node.has_attr("mode")) attributes.emplace("mode", node.attr("mode"));
        ctx.set_input_grad(0, ctx.emit("PadGrad", inputs, 1, attributes)[0]);
      })
      .doc("data padded by `pads` (begin pads, then end pads, of each axis in `axes`; negative crops) in "
           "mode constant, edge, reflect or wrap");
  registry.add(std::move(pad));

  OpSchema pad_grad("PadGrad");
  pad_grad.input("dY", "T").input("data", "").input("pads", "I").input("axes", "I", Arity::kOptional).output("dX", "T")
      .type_constraint("T", kNumericDTypes).type_constraint("I", {DType::kInt64, DType::kInt32})
      .attr("mode", AttrType::kString, Attribute(std::string("constant")))
      .infer(infer_gradient_like_input_1)
      .doc("dY summed back onto the data elements each padded element copies: the gradient of Pad");
  registry.add(std::move(pad_grad));
}

void register_pad_cpu_kernels(KernelRegistry& registry) {
  registry.add("Pad", DeviceType::kCpu, kAnyDTypes, [](const Node& node) { return std::make_unique<PadKernel>(node, false); });
  registry.add("PadGrad", DeviceType::kCpu, kNumericDTypes, [](const Node& node) { return std::make_unique<PadKernel>(node, true); });
}

}  // namespace weir
