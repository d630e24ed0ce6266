#include "ops/nn/grid_sample.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/graph.h"
#include "ops/dtype_dispatch.h"
#include "ops/dtype_sets.h"
#include "ops/shape_inference.h"
#include "ops/threading.h"
#include "ops/tensor/indexing.h"

namespace weir {

namespace {

enum class Mode { kBilinear, kNearest, kBicubic };
enum class Padding { kZeros, kBorder, kReflection };

std::string string_attr(const Node& node, const char* name, const char* fallback) {
  return node.has_attr(name) ? node.attr(name).s() : fallback;
}

struct GridSampleAttributes {
  Mode mode = Mode::kBilinear;
  Padding padding = Padding::kZeros;
  bool align_corners = false;

  // Throws weir::Error(kInvalidArgument) naming the node on an unknown mode.
  static GridSampleAttributes of(const Node& node) {
    auto bad = [&](const char* what, const std::string& value, const char* allowed) {
      return Error(ErrorKind::kInvalidArgument, node.op_type() + " '" + node.name() + "': " + what + " '" + value +
                                                    "' is not one of " + allowed).with_node(node.name());
    };
    GridSampleAttributes result;
    std::string mode = string_attr(node, "mode", "bilinear");
    if (mode == "bilinear") result.mode = Mode::kBilinear;
    else if (mode == "nearest") result.mode = Mode::kNearest;
    else if (mode == "bicubic") result.mode = Mode::kBicubic;
    else throw bad("mode", mode, "bilinear, nearest, bicubic");
    std::string padding = string_attr(node, "padding_mode", "zeros");
    if (padding == "zeros") result.padding = Padding::kZeros;
    else if (padding == "border") result.padding = Padding::kBorder;
    else if (padding == "reflection") result.padding = Padding::kReflection;
    else throw bad("padding_mode", padding, "zeros, border, reflection");
    result.align_corners = node.has_attr("align_corners") && node.attr("align_corners").i() != 0;
    return result;
  }
};

// Grid values along one axis of `size` pixels as pixel coordinates. Each
// mapping multiplies `slope` by its derivative, for the gradient.
class Axis {
 public:
  Axis(int64_t size, const GridSampleAttributes& attrs) : size_(size), padding_(attrs.padding), align_(attrs.align_corners) {}

  double unnormalize(double g, double& slope) const {
    auto size = static_cast<double>(size_);
    slope *= align_ ? (size - 1) / 2 : size / 2;
    return align_ ? (g + 1) / 2 * (size - 1) : ((g + 1) * size - 1) / 2;
  }

  double pad(double x, double& slope) const {
    if (padding_ == Padding::kZeros) return x;
    if (padding_ == Padding::kReflection) {
      auto size = static_cast<double>(size_);
      x = align_ ? reflect(x, 0, 2 * (size - 1), slope) : reflect(x, -1, 2 * size - 1, slope);
    }
    return clip(x, slope);
  }

  // Whether pixel coordinate x (an integer value) lies inside the axis.
  bool inside(double x) const { return x >= 0 && x <= static_cast<double>(size_ - 1); }

 private:
  double clip(double x, double& slope) const {
    if (x <= 0) {
      slope = 0;
      return 0;
    }
    if (x >= static_cast<double>(size_ - 1)) {
      slope = 0;
      return static_cast<double>(size_ - 1);
    }
    return x;
  }

  // Reflects x into [twice_low / 2, twice_high / 2] by repeated mirroring.
  static double reflect(double x, double twice_low, double twice_high, double& slope) {
    if (twice_low == twice_high) {
      slope = 0;
      return 0;
    }
    double low = twice_low / 2, span = (twice_high - twice_low) / 2, sign = 1;
    x -= low;
    if (x < 0) {
      sign = -1;
      x = -x;
    }
    double extra = std::fmod(x, span), flips = std::floor(x / span);
    if (std::fmod(flips, 2) == 0) {
      slope *= sign;
      return extra + low;
    }
    slope *= -sign;
    return span - extra + low;
  }

  int64_t size_;
  Padding padding_;
  bool align_;
};

// One tap of an output location: element `index` of an [H, W] plane times
// `weight`, and the weight's derivatives along the grid's x and y.
struct Tap {
  int64_t index;
  double weight, dx, dy;
};

constexpr double kCubicA = -0.75;

// Cubic convolution weights of the taps at -1, 0, 1, 2 around fraction t,
// and their derivatives along t.
void cubic_coefficients(double t, std::array<double, 4>& c, std::array<double, 4>& dc) {
  constexpr double a = kCubicA;
  auto near = [](double x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };  // |x| <= 1
  auto far = [](double x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };  // 1 < |x| < 2
  auto near_slope = [](double x) { return (3 * (a + 2) * x - 2 * (a + 3)) * x; };
  auto far_slope = [](double x) { return (3 * a * x - 10 * a) * x + 8 * a; };
  c = {far(t + 1), near(t), near(1 - t), far(2 - t)};
  dc = {far_slope(t + 1), near_slope(t), -near_slope(1 - t), -far_slope(2 - t)};
}

class Sampler {
 public:
  Sampler(const GridSampleAttributes& attrs, int64_t height, int64_t width)
      : attrs_(attrs), width_(width), x_axis_(width, attrs), y_axis_(height, attrs) {}

  // The taps of grid point (gx, gy): at most 16, returned as their count.
  int taps(double gx, double gy, std::array<Tap, 16>& out) const {
    double sx = 1, sy = 1;
    double ix = x_axis_.unnormalize(gx, sx), iy = y_axis_.unnormalize(gy, sy);
    if (attrs_.mode != Mode::kBicubic) {
      ix = x_axis_.pad(ix, sx);
      iy = y_axis_.pad(iy, sy);
    }
    if (!std::isfinite(ix) || !std::isfinite(iy)) return 0;
    int count = 0;
    if (attrs_.mode == Mode::kNearest) {
      double rx = std::nearbyint(ix), ry = std::nearbyint(iy);
      if (x_axis_.inside(rx) && y_axis_.inside(ry)) out[count++] = {index(rx, ry), 1.0, 0.0, 0.0};
      return count;
    }
    double x0 = std::floor(ix), y0 = std::floor(iy), fx = ix - x0, fy = iy - y0;
    if (attrs_.mode == Mode::kBilinear) {
      for (int i = 0; i < 2; ++i) {
        double y = y0 + i, wy = i == 1 ? fy : 1 - fy, dwy = i == 1 ? 1 : -1;
        if (!y_axis_.inside(y)) continue;
        for (int j = 0; j < 2; ++j) {
          double x = x0 + j, wx = j == 1 ? fx : 1 - fx, dwx = j == 1 ? 1 : -1;
          if (!x_axis_.inside(x)) continue;
          out[count++] = {index(x, y), wx * wy, dwx * wy * sx, wx * dwy * sy};
        }
      }
      return count;
    }
    std::array<double, 4> cx{}, dcx{}, cy{}, dcy{};
    cubic_coefficients(fx, cx, dcx);
    cubic_coefficients(fy, cy, dcy);
    for (int i = 0; i < 4; ++i) {
      double ignored = 1;
      double y = y_axis_.pad(y0 - 1 + i, ignored);
      if (!y_axis_.inside(y)) continue;
      for (int j = 0; j < 4; ++j) {
        double x = x_axis_.pad(x0 - 1 + j, ignored);
        if (!x_axis_.inside(x)) continue;
        out[count++] = {index(x, y), cy[static_cast<size_t>(i)] * cx[static_cast<size_t>(j)],
                        cy[static_cast<size_t>(i)] * dcx[static_cast<size_t>(j)] * sx,
                        dcy[static_cast<size_t>(i)] * cx[static_cast<size_t>(j)] * sy};
      }
    }
    return count;
  }

 private:
  int64_t index(double x, double y) const { return static_cast<int64_t>(y) * width_ + static_cast<int64_t>(x); }

  GridSampleAttributes attrs_;
  int64_t width_;
  Axis x_axis_, y_axis_;
};

// X and grid's sizes, checked.
struct Problem {
  int64_t n, c, h, w, out_h, out_w;
};

Problem problem_of(const KernelContext& ctx, const Tensor& x, const Tensor& grid) {
  const std::vector<int64_t>& xs = x.sizes();
  const std::vector<int64_t>& gs = grid.sizes();
  if (xs.size() != 4) ctx.fail("X " + x.type_string() + " must be [N, C, H, W] (only 4-D input is supported)");
  if (gs.size() != 4 || gs[3] != 2 || gs[0] != xs[0]) {
    ctx.fail("grid " + grid.type_string() + " must be [N, Ho, Wo, 2] with N = " + std::to_string(xs[0]) + " as X " + x.type_string());
  }
  return {xs[0], xs[1], xs[2], xs[3], gs[1], gs[2]};
}

class GridSampleKernel final : public OpKernel {
 public:
  explicit GridSampleKernel(const Node& node) : attrs_(GridSampleAttributes::of(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Problem p = problem_of(ctx, x, ctx.input(1));
    const std::vector<double> grid = float_values(ctx, ctx.input(1), "grid");
    Tensor& y = ctx.allocate_output(0, x.dtype(), {p.n, p.c, p.out_h, p.out_w}, KernelContext::Fill::kUninitialized);
    const Sampler sampler(attrs_, p.h, p.w);
    const int64_t locations = p.out_h * p.out_w, plane = p.h * p.w;
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        const T* in = x.data<T>();
        T* out = y.data<T>();
        int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(p.c, 1));
        parallel_for(p.n * locations, grain, [&](int64_t begin, int64_t end) {
          std::array<Tap, 16> taps{};
          for (int64_t l = begin; l < end; ++l) {
            int64_t n = l / locations, location = l % locations;
            int count = sampler.taps(grid[static_cast<size_t>(l * 2)], grid[static_cast<size_t>(l * 2 + 1)], taps);
            for (int64_t c = 0; c < p.c; ++c) {
              const T* source = in + (n * p.c + c) * plane;
              double sum = 0;
              for (int t = 0; t < count; ++t) sum += taps[static_cast<size_t>(t)].weight * static_cast<double>(load(source[taps[static_cast<size_t>(t)].index]));
              out[(n * p.c + c) * locations + location] = store<T>(static_cast<ComputeType<T>>(sum));
            }
          }
        });
      } else {
        ctx.fail("X must be floating point, got " + x.type_string());
      }
    });
  }

 private:
  GridSampleAttributes attrs_;
};

class GridSampleGradKernel final : public OpKernel {
 public:
  explicit GridSampleGradKernel(const Node& node) : attrs_(GridSampleAttributes::of(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(1);
    const Tensor& grid_tensor = ctx.input(2);
    const Problem p = problem_of(ctx, x, grid_tensor);
    const std::vector<int64_t> out_sizes = {p.n, p.c, p.out_h, p.out_w};
    if (ctx.input(0).sizes() != out_sizes) ctx.fail("dY " + ctx.input(0).type_string() + " must be " + format_sizes(out_sizes));
    const std::vector<double> dy = float_values(ctx, ctx.input(0), "dY");
    const std::vector<double> xv = float_values(ctx, x, "X");
    const std::vector<double> grid = float_values(ctx, grid_tensor, "grid");
    std::vector<double> dx(xv.size(), 0.0), dgrid(grid.size(), 0.0);
    const Sampler sampler(attrs_, p.h, p.w);
    const int64_t locations = p.out_h * p.out_w, plane = p.h * p.w;
    // One batch item per task: its dX planes and grid rows are its own.
    parallel_for(p.n, 1, [&](int64_t begin, int64_t end) {
      std::array<Tap, 16> taps{};
      for (int64_t n = begin; n < end; ++n) {
        for (int64_t location = 0; location < locations; ++location) {
          auto g = static_cast<size_t>((n * locations + location) * 2);
          int count = sampler.taps(grid[g], grid[g + 1], taps);
          double gx = 0, gy = 0;
          for (int64_t c = 0; c < p.c; ++c) {
            double upstream = dy[static_cast<size_t>((n * p.c + c) * locations + location)];
            auto base = static_cast<size_t>((n * p.c + c) * plane);
            for (int t = 0; t < count; ++t) {
              const Tap& tap = taps[static_cast<size_t>(t)];
              auto at = base + static_cast<size_t>(tap.index);
              dx[at] += tap.weight * upstream;
              gx += tap.dx * xv[at] * upstream;
              gy += tap.dy * xv[at] * upstream;
            }
          }
          dgrid[g] = gx;
          dgrid[g + 1] = gy;
        }
      }
    });
    store_values(ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized), dx);
    store_values(ctx.allocate_output(1, grid_tensor.dtype(), grid_tensor.sizes(), KernelContext::Fill::kUninitialized), dgrid);
  }

 private:
  static void store_values(Tensor& out, const std::vector<double>& values) {
    dispatch_dtype(out.dtype(), [&]<typename T>() {
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        T* data = out.data<T>();
        for (size_t i = 0; i < values.size(); ++i) data[i] = store<T>(static_cast<ComputeType<T>>(values[i]));
      }
    });
  }

  GridSampleAttributes attrs_;
};

void infer_grid_sample(InferenceContext& ctx) {
  GridSampleAttributes::of(ctx.node());  // rejects unknown modes now
  const TensorType* x = ctx.input_type(0);
  const TensorType* grid = ctx.input_type(1);
  if (x == nullptr) return;
  if (x->shape.has_rank() && x->shape.rank() != 4) ctx.fail("X " + x->to_string() + " must be [N, C, H, W] (only 4-D input is supported)");
  if (grid != nullptr && grid->shape.has_rank()) {
    const Shape& g = grid->shape;
    bool bad = g.rank() != 4 || (g[3].is_static() && g[3].size() != 2);
    if (!bad && x->shape.has_rank() && g[0].is_static() && x->shape[0].is_static() && g[0].size() != x->shape[0].size()) bad = true;
    if (bad) ctx.fail("grid " + grid->to_string() + " must be [N, Ho, Wo, 2] for X " + x->to_string());
  }
  Dim n = symbolic_dim(ctx, 0), c = symbolic_dim(ctx, 1), h = symbolic_dim(ctx, 2), w = symbolic_dim(ctx, 3);
  if (x->shape.has_rank()) {
    n = x->shape[0];
    c = x->shape[1];
  }
  if (grid != nullptr && grid->shape.has_rank()) {
    h = grid->shape[1];
    w = grid->shape[2];
  }
  ctx.set_output_type(0, {x->dtype, Shape{n, c, h, w}});
}

OpSchema with_grid_sample_attributes(OpSchema schema) {
  schema.attr("align_corners", AttrType::kInt, Attribute(int64_t{0}))
      .attr("mode", AttrType::kString, Attribute(std::string("bilinear")))
      .attr("padding_mode", AttrType::kString, Attribute(std::string("zeros")));
  return schema;
}

}  // namespace

void register_grid_sample_schemas(OpRegistry& registry) {
  OpSchema grid_sample("GridSample");
  grid_sample.input("X", "T").input("grid", "G").output("Y", "T")
      .type_constraint("T", kFloatDTypes).type_constraint("G", kFloatDTypes)
      .infer(infer_grid_sample)
      .gradient([](GradientContext& ctx) {
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        const Node& node = ctx.node();
        std::vector<Value*> grads = ctx.emit("GridSampleGrad", {grad, node.input(0), node.input(1)}, 2, node.attributes());
        ctx.set_input_grad(0, grads[0]);
        ctx.set_input_grad(1, grads[1]);
      })
      .doc("X [N, C, H, W] sampled at the normalized grid [N, Ho, Wo, 2] locations: bilinear, nearest or bicubic, "
           "with zeros, border or reflection padding");
  registry.add(with_grid_sample_attributes(std::move(grid_sample)));

  OpSchema grad("GridSampleGrad");
  grad.input("dY", "T").input("X", "T").input("grid", "G").output("dX", "T").output("dGrid", "G")
      .type_constraint("T", kFloatDTypes).type_constraint("G", kFloatDTypes)
      .infer([](InferenceContext& ctx) {
        if (const TensorType* x = ctx.input_type(1); x != nullptr) ctx.set_output_type(0, *x);
        if (const TensorType* grid = ctx.input_type(2); grid != nullptr) ctx.set_output_type(1, *grid);
      })
      .doc("the gradients of GridSample: dY spread over the taps each output read, and along the grid");
  registry.add(with_grid_sample_attributes(std::move(grad)));
}

void register_grid_sample_cpu_kernels(KernelRegistry& registry) {
  registry.add("GridSample", DeviceType::kCpu, kFloatDTypes, [](const Node& node) { return std::make_unique<GridSampleKernel>(node); });
  registry.add("GridSampleGrad", DeviceType::kCpu, kFloatDTypes,
               [](const Node& node) { return std::make_unique<GridSampleGradKernel>(node); });
}

}  // namespace weir
