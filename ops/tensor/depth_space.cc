#include "ops/tensor/depth_space.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/graph.h"
#include "ops/dtype_sets.h"
#include "ops/node_attributes.h"
#include "ops/shape_inference.h"
#include "ops/threading.h"

namespace weir {

namespace {

// How depth channels map to (channel, row offset, column offset) in a block.
enum class Mode { kDcr, kCrd };

// Which way a node moves data.
enum class Direction { kToSpace, kToDepth };

struct Rearrangement {
  int64_t blocksize = 0;
  Mode mode = Mode::kDcr;
  Direction direction = Direction::kToSpace;
};

// The node's blocksize and mode, and a message when either is invalid ("" when valid).
std::string read_attributes(const Node& node, Rearrangement& r) {
  r.blocksize = int_attr(node, "blocksize", 0);
  std::string mode = node.has_attr("mode") ? node.attr("mode").s() : "DCR";
  if (r.blocksize < 1) return "blocksize must be at least 1, got " + std::to_string(r.blocksize);
  if (mode != "DCR" && mode != "CRD") return "mode must be DCR or CRD, got '" + mode + "'";
  r.mode = mode == "CRD" ? Mode::kCrd : Mode::kDcr;
  return "";
}

// The output sizes for input `sizes`, or a message saying why there are none.
std::string output_sizes(const Rearrangement& r, const std::vector<int64_t>& sizes, std::vector<int64_t>& out) {
  if (sizes.size() != 4) return "needs a 4-D input [N, C, H, W], got rank " + std::to_string(sizes.size());
  const int64_t b = r.blocksize, square = b * b;
  if (r.direction == Direction::kToSpace) {
    if (sizes[1] % square != 0) {
      return "channels " + std::to_string(sizes[1]) + " are not a multiple of blocksize^2 = " + std::to_string(square);
    }
    out = {sizes[0], sizes[1] / square, sizes[2] * b, sizes[3] * b};
  } else {
    if (sizes[2] % b != 0 || sizes[3] % b != 0) {
      return "height " + std::to_string(sizes[2]) + " and width " + std::to_string(sizes[3]) +
             " must be multiples of blocksize " + std::to_string(b);
    }
    out = {sizes[0], sizes[1] * square, sizes[2] / b, sizes[3] / b};
  }
  return "";
}

// Copies between the depth form `depth` [N, C*b*b, H, W] and the space form
// `space` [N, C, H*b, W*b] (`space_sizes`), in `r.direction`.
template <typename Element>
void rearrange(const Rearrangement& r, const std::vector<int64_t>& space_sizes, const void* from, void* to) {
  const int64_t b = r.blocksize, channels = space_sizes[1];
  const int64_t height = space_sizes[2] / b, width = space_sizes[3] / b;
  const int64_t plane = height * width, space_row = width * b;
  const bool to_space = r.direction == Direction::kToSpace;
  const auto* src = static_cast<const Element*>(from);
  auto* dst = static_cast<Element*>(to);
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, plane * b * b));
  parallel_for(space_sizes[0] * channels, grain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t n = row / channels, c = row % channels;
      for (int64_t i = 0; i < b; ++i) {
        for (int64_t j = 0; j < b; ++j) {
          int64_t depth_channel = r.mode == Mode::kDcr ? (i * b + j) * channels + c : (c * b + i) * b + j;
          const int64_t depth_base = (n * channels * b * b + depth_channel) * plane;
          const int64_t space_base = row * plane * b * b + i * space_row + j;
          for (int64_t h = 0; h < height; ++h) {
            const int64_t depth_offset = depth_base + h * width;
            const int64_t space_offset = space_base + h * b * space_row;
            if (to_space) {
              for (int64_t w = 0; w < width; ++w) dst[space_offset + w * b] = src[depth_offset + w];
            } else {
              for (int64_t w = 0; w < width; ++w) dst[depth_offset + w] = src[space_offset + w * b];
            }
          }
        }
      }
    }
  });
}

class DepthSpaceKernel final : public OpKernel {
 public:
  DepthSpaceKernel(const Node& node, Direction direction) {
    error_ = read_attributes(node, r_);
    r_.direction = direction;
  }

  void compute(KernelContext& ctx) override {
    if (!error_.empty()) ctx.fail(error_);
    const Tensor& x = ctx.input(0);
    std::vector<int64_t> sizes;
    std::string problem = output_sizes(r_, x.sizes(), sizes);
    if (!problem.empty()) ctx.fail("input " + x.type_string() + ": " + problem);
    Tensor& y = ctx.allocate_output(0, x.dtype(), sizes, KernelContext::Fill::kUninitialized);
    if (x.num_elements() == 0) return;
    const std::vector<int64_t>& space_sizes = r_.direction == Direction::kToSpace ? sizes : x.sizes();
    switch (dtype_size(x.dtype())) {
      case 1: rearrange<uint8_t>(r_, space_sizes, x.raw_data(), y.raw_data()); break;
      case 2: rearrange<uint16_t>(r_, space_sizes, x.raw_data(), y.raw_data()); break;
      case 4: rearrange<uint32_t>(r_, space_sizes, x.raw_data(), y.raw_data()); break;
      case 8: rearrange<uint64_t>(r_, space_sizes, x.raw_data(), y.raw_data()); break;
      default: ctx.fail("cannot move elements of " + x.type_string());
    }
  }

 private:
  Rearrangement r_;
  std::string error_;
};

ShapeInferenceFn infer_rearrangement(Direction direction) {
  return [direction](InferenceContext& ctx) {
    Rearrangement r;
    std::string error = read_attributes(ctx.node(), r);
    if (!error.empty()) ctx.fail(error);
    r.direction = direction;
    const TensorType* x = ctx.input_type(0);
    if (x == nullptr) return;
    if (!x->shape.has_rank()) {
      ctx.set_output_type(0, TensorType{x->dtype, Shape::unknown_rank()});
      return;
    }
    if (x->shape.rank() != 4) ctx.fail("needs a 4-D input [N, C, H, W], got " + x->shape.to_string());
    // Static axes are checked and computed; a symbolic one stays so (N) or
    // becomes a fresh symbol.
    std::vector<int64_t> sizes;
    for (size_t i = 0; i < 4; ++i) sizes.push_back(x->shape[i].is_static() ? x->shape[i].size() : r.blocksize * r.blocksize);
    std::vector<int64_t> out;
    std::string problem = output_sizes(r, sizes, out);
    if (!problem.empty()) ctx.fail("input " + x->shape.to_string() + ": " + problem);
    std::vector<Dim> dims = {x->shape[0]};
    for (size_t i = 1; i < 4; ++i) dims.push_back(x->shape[i].is_static() ? Dim(out[i]) : symbolic_dim(ctx, i));
    ctx.set_output_type(0, TensorType{x->dtype, Shape(std::move(dims))});
  };
}

std::map<std::string, Attribute> block_attributes(const Node& node, const char* mode) {
  std::map<std::string, Attribute> attributes = {{"mode", Attribute(mode)}};
  if (node.has_attr("blocksize")) attributes.emplace("blocksize", node.attr("blocksize"));
  return attributes;
}

}  // namespace

void register_depth_space_schemas(OpRegistry& registry) {
  OpSchema to_space("DepthToSpace");
  to_space.input("input", "T")
      .output("output", "T")
      .type_constraint("T", kAnyDTypes)
      .required_attr("blocksize", AttrType::kInt)
      .attr("mode", AttrType::kString, Attribute("DCR"))
      .infer(infer_rearrangement(Direction::kToSpace))
      .gradient([](GradientContext& ctx) {
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        const Node& node = ctx.node();
        const char* mode = node.has_attr("mode") && node.attr("mode").s() == "CRD" ? "CRD" : "DCR";
        ctx.set_input_grad(0, ctx.emit("DepthToSpaceGrad", {grad}, 1, block_attributes(node, mode))[0]);
      })
      .doc("[N, C*b*b, H, W] -> [N, C, H*b, W*b]: depth channels moved into b x b spatial blocks, "
           "ordered depth-column-row (DCR) or column-row-depth (CRD)");
  registry.add(std::move(to_space));

  OpSchema to_depth("SpaceToDepth");
  to_depth.input("input", "T")
      .output("output", "T")
      .type_constraint("T", kAnyDTypes)
      .required_attr("blocksize", AttrType::kInt)
      .infer(infer_rearrangement(Direction::kToDepth))
      .gradient([](GradientContext& ctx) {
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        ctx.set_input_grad(0, ctx.emit("DepthToSpace", {grad}, 1, block_attributes(ctx.node(), "DCR"))[0]);
      })
      .doc("[N, C, H, W] -> [N, C*b*b, H/b, W/b]: each b x b spatial block moved into depth; "
           "the inverse of DepthToSpace in mode DCR");
  registry.add(std::move(to_depth));

  OpSchema grad("DepthToSpaceGrad");
  grad.input("dY", "T")
      .output("dX", "T")
      .type_constraint("T", kAnyDTypes)
      .required_attr("blocksize", AttrType::kInt)
      .attr("mode", AttrType::kString, Attribute("DCR"))
      .infer(infer_rearrangement(Direction::kToDepth))
      .doc("The gradient of DepthToSpace: space to depth with `mode`'s channel order (DCR: SpaceToDepth)");
  registry.add(std::move(grad));
}

void register_depth_space_cpu_kernels(KernelRegistry& registry) {
  registry.add("DepthToSpace", DeviceType::kCpu, kAnyDTypes,
               [](const Node& node) { return std::make_unique<DepthSpaceKernel>(node, Direction::kToSpace); });
  registry.add("SpaceToDepth", DeviceType::kCpu, kAnyDTypes,
               [](const Node& node) { return std::make_unique<DepthSpaceKernel>(node, Direction::kToDepth); });
  registry.add("DepthToSpaceGrad", DeviceType::kCpu, kAnyDTypes,
               [](const Node& node) { return std::make_unique<DepthSpaceKernel>(node, Direction::kToDepth); });
}

}  // namespace weir
