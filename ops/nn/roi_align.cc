#include "ops/nn/roi_align.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/graph.h"
#include "ops/dtype_dispatch.h"
#include "ops/dtype_sets.h"
#include "ops/node_attributes.h"
#include "ops/shape_inference.h"
#include "ops/tensor/indexing.h"
#include "ops/threading.h"

namespace weir {

namespace {

std::string string_attr(const Node& node, const char* name, const char* fallback) {
  return node.has_attr(name) ? node.attr(name).s() : fallback;
}

struct RoiAlignAttributes {
  bool max_mode = false;
  bool half_pixel = true;
  int64_t out_h = 1, out_w = 1, sampling_ratio = 0;
  double spatial_scale = 1.0;

  // Throws weir::Error(kInvalidArgument) naming the node on a bad attribute.
  static RoiAlignAttributes of(const Node& node) {
    auto bad = [&](const std::string& message) {
      return Error(ErrorKind::kInvalidArgument, node.op_type() + " '" + node.name() + "': " + message).with_node(node.name());
    };
    RoiAlignAttributes result;
    std::string mode = string_attr(node, "mode", "avg");
    if (mode != "avg" && mode != "max") throw bad("mode '" + mode + "' is not one of avg, max");
    result.max_mode = mode == "max";
    std::string transform = string_attr(node, "coordinate_transformation_mode", "half_pixel");
    if (transform != "half_pixel" && transform != "output_half_pixel") {
      throw bad("coordinate_transformation_mode '" + transform + "' is not one of half_pixel, output_half_pixel");
    }
    result.half_pixel = transform == "half_pixel";
    result.out_h = int_attr(node, "output_height", 1);
    result.out_w = int_attr(node, "output_width", 1);
    result.sampling_ratio = int_attr(node, "sampling_ratio", 0);
    result.spatial_scale = float_attr(node, "spatial_scale", 1.0);
    if (result.out_h < 1 || result.out_w < 1) {
      throw bad("output_height and output_width must be at least 1, got " + std::to_string(result.out_h) + " and " +
                std::to_string(result.out_w));
    }
    if (result.sampling_ratio < 0) throw bad("sampling_ratio must not be negative, got " + std::to_string(result.sampling_ratio));
    return result;
  }
};

// A bilinear sample: four plane offsets and their weights.
struct Sample {
  std::array<int64_t, 4> index{};
  std::array<double, 4> weight{};
};

// The bilinear sample of an [h, w] plane at (y, x), as ONNX Runtime takes it:
// zero weights more than a pixel outside, coordinates below 0 clamped to 0,
// and the last row/column repeated past the edge.
Sample bilinear(double y, double x, int64_t h, int64_t w) {
  Sample s;
  if (h <= 0 || w <= 0) return s;
  if (y < -1.0 || y > static_cast<double>(h) || x < -1.0 || x > static_cast<double>(w)) return s;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  auto y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(x);
  int64_t y_high = y_low + 1, x_high = x_low + 1;
  if (y_low >= h - 1) {
    y_high = y_low = h - 1;
    y = static_cast<double>(y_low);
  }
  if (x_low >= w - 1) {
    x_high = x_low = w - 1;
    x = static_cast<double>(x_low);
  }
  double ly = y - static_cast<double>(y_low), lx = x - static_cast<double>(x_low), hy = 1 - ly, hx = 1 - lx;
  s.index = {y_low * w + x_low, y_low * w + x_high, y_high * w + x_low, y_high * w + x_high};
  s.weight = {hy * hx, hy * lx, ly * hx, ly * lx};
  return s;
}

// The most samples per bin axis sampling_ratio 0 may ask for.
constexpr int64_t kMaxAdaptiveGrid = int64_t{1} << 20;

class RoiAlignKernel final : public OpKernel {
 public:
  explicit RoiAlignKernel(const Node& node) : attrs_(RoiAlignAttributes::of(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& rois_tensor = ctx.input(1);
    const Tensor& batch_tensor = ctx.input(2);
    const std::vector<int64_t>& xs = x.sizes();
    if (xs.size() != 4) ctx.fail("X " + x.type_string() + " must be [N, C, H, W]");
    const std::vector<int64_t>& rs = rois_tensor.sizes();
    if (rs.size() != 2 || rs[1] != 4) ctx.fail("rois " + rois_tensor.type_string() + " must be [num_rois, 4]");
    if (batch_tensor.sizes() != std::vector<int64_t>{rs[0]}) {
      ctx.fail("batch_indices " + batch_tensor.type_string() + " must be [" + std::to_string(rs[0]) + "], one per roi");
    }
    const int64_t n = xs[0], channels = xs[1], h = xs[2], w = xs[3], count = rs[0];
    const std::vector<double> rois = float_values(ctx, rois_tensor, "rois");
    const std::vector<int64_t> batch = index_values(ctx, batch_tensor, "batch_indices");
    for (int64_t r = 0; r < count; ++r) {
      int64_t b = batch[static_cast<size_t>(r)];
      if (b < 0 || b >= n) ctx.fail("batch_indices[" + std::to_string(r) + "] = " + std::to_string(b) + " is outside [0, " + std::to_string(n) + ")");
      for (int64_t k = 0; k < 4; ++k) {
        if (!std::isfinite(rois[static_cast<size_t>(r * 4 + k)])) ctx.fail("roi " + std::to_string(r) + " has a non-finite coordinate");
      }
    }
    const int64_t out_h = attrs_.out_h, out_w = attrs_.out_w;
    Tensor& y = ctx.allocate_output(0, x.dtype(), {count, channels, out_h, out_w}, KernelContext::Fill::kUninitialized);
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        const T* in = x.data<T>();
        T* out = y.data<T>();
        parallel_for(count, 1, [&](int64_t begin, int64_t end) {
          std::vector<Sample> samples;
          for (int64_t r = begin; r < end; ++r) {
            const double* roi = &rois[static_cast<size_t>(r * 4)];
            const double offset = attrs_.half_pixel ? 0.5 : 0.0;
            const double start_w = roi[0] * attrs_.spatial_scale - offset, start_h = roi[1] * attrs_.spatial_scale - offset;
            double roi_w = roi[2] * attrs_.spatial_scale - offset - start_w, roi_h = roi[3] * attrs_.spatial_scale - offset - start_h;
            if (!attrs_.half_pixel) {
              roi_w = std::max(roi_w, 1.0);
              roi_h = std::max(roi_h, 1.0);
            }
            const double bin_h = roi_h / static_cast<double>(out_h), bin_w = roi_w / static_cast<double>(out_w);
            if (attrs_.sampling_ratio == 0 && !(bin_h < static_cast<double>(kMaxAdaptiveGrid) && bin_w < static_cast<double>(kMaxAdaptiveGrid))) {
              ctx.fail("roi " + std::to_string(r) + " needs more than " + std::to_string(kMaxAdaptiveGrid) +
                       " samples per bin axis; give sampling_ratio");
            }
            const int64_t grid_h = attrs_.sampling_ratio > 0 ? attrs_.sampling_ratio : static_cast<int64_t>(std::ceil(std::max(bin_h, 0.0)));
            const int64_t grid_w = attrs_.sampling_ratio > 0 ? attrs_.sampling_ratio : static_cast<int64_t>(std::ceil(std::max(bin_w, 0.0)));
            const double samples_per_bin = static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
            // The samples of every bin, shared by the channels.
            samples.clear();
            for (int64_t ph = 0; ph < out_h; ++ph) {
              for (int64_t pw = 0; pw < out_w; ++pw) {
                for (int64_t iy = 0; iy < grid_h; ++iy) {
                  double yy = start_h + static_cast<double>(ph) * bin_h + (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(grid_h);
                  for (int64_t ix = 0; ix < grid_w; ++ix) {
                    double xx = start_w + static_cast<double>(pw) * bin_w + (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(grid_w);
                    samples.push_back(bilinear(yy, xx, h, w));
                  }
                }
              }
            }
            const int64_t b = batch[static_cast<size_t>(r)];
            const auto per_bin = static_cast<size_t>(grid_h * grid_w);
            for (int64_t c = 0; c < channels; ++c) {
              const T* plane = in + (b * channels + c) * h * w;
              T* dst = out + (r * channels + c) * out_h * out_w;
              for (int64_t bin = 0; bin < out_h * out_w; ++bin) {
                double value = 0;
                for (size_t s = 0; s < per_bin; ++s) {
                  const Sample& sample = samples[static_cast<size_t>(bin) * per_bin + s];
                  if (attrs_.max_mode) {
                    double largest = sample.weight[0] * static_cast<double>(load(plane[sample.index[0]]));
                    for (size_t k = 1; k < 4; ++k) largest = std::max(largest, sample.weight[k] * static_cast<double>(load(plane[sample.index[k]])));
                    value = s == 0 ? largest : std::max(value, largest);
                  } else {
                    for (size_t k = 0; k < 4; ++k) value += sample.weight[k] * static_cast<double>(load(plane[sample.index[k]]));
                  }
                }
                if (!attrs_.max_mode) value /= samples_per_bin;
                dst[bin] = store<T>(static_cast<ComputeType<T>>(value));
              }
            }
          }
        });
      } else {
        ctx.fail("X must be floating point, got " + x.type_string());
      }
    });
  }

 private:
  RoiAlignAttributes attrs_;
};

void infer_roi_align(InferenceContext& ctx) {
  RoiAlignAttributes attrs = RoiAlignAttributes::of(ctx.node());
  const TensorType* x = ctx.input_type(0);
  const TensorType* rois = ctx.input_type(1);
  const TensorType* batch = ctx.input_type(2);
  if (x == nullptr) return;
  if (x->shape.has_rank() && x->shape.rank() != 4) ctx.fail("X " + x->to_string() + " must be [N, C, H, W]");
  if (rois != nullptr && rois->shape.has_rank() &&
      (rois->shape.rank() != 2 || (rois->shape[1].is_static() && rois->shape[1].size() != 4))) {
    ctx.fail("rois " + rois->to_string() + " must be [num_rois, 4]");
  }
  if (batch != nullptr && batch->shape.has_rank() && batch->shape.rank() != 1) {
    ctx.fail("batch_indices " + batch->to_string() + " must be [num_rois]");
  }
  Dim count = symbolic_dim(ctx, 0), channels = symbolic_dim(ctx, 1);
  if (rois != nullptr && rois->shape.has_rank()) count = rois->shape[0];
  else if (batch != nullptr && batch->shape.has_rank()) count = batch->shape[0];
  if (x->shape.has_rank()) channels = x->shape[1];
  ctx.set_output_type(0, {x->dtype, Shape{count, channels, Dim(attrs.out_h), Dim(attrs.out_w)}});
}

}  // namespace

void register_roi_align_schema(OpRegistry& registry) {
  OpSchema schema("RoiAlign");
  schema.input("X", "T").input("rois", "T").input("batch_indices", "I").output("Y", "T")
      .type_constraint("T", kFloatDTypes).type_constraint("I", {DType::kInt64})
      .attr("coordinate_transformation_mode", AttrType::kString, Attribute(std::string("half_pixel")))
      .attr("mode", AttrType::kString, Attribute(std::string("avg")))
      .attr("output_height", AttrType::kInt, Attribute(int64_t{1}))
      .attr("output_width", AttrType::kInt, Attribute(int64_t{1}))
      .attr("sampling_ratio", AttrType::kInt, Attribute(int64_t{0}))
      .attr("spatial_scale", AttrType::kFloat, Attribute(1.0))
      .infer(infer_roi_align)
      .doc("each roi of X pooled into output_height x output_width bins of bilinear samples (average or max)");
  registry.add(std::move(schema));
}

void register_roi_align_cpu_kernel(KernelRegistry& registry) {
  registry.add("RoiAlign", DeviceType::kCpu, kFloatDTypes, [](const Node& node) { return std::make_unique<RoiAlignKernel>(node); });
}

}  // namespace weir
