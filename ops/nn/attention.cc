#include "ops/nn/attention.h"

#include <dnnl.hpp>

#include <cmath>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "ops/dnnl_scratchpad.h"
#include "ops/dtype_dispatch.h"
#include "ops/nn/dnnl_softmax.h"
#include "ops/shape_inference.h"

namespace weir {

namespace {

const std::vector<DType> kAttentionTypes = {DType::kFloat32, DType::kBFloat16, DType::kFloat64};

// The mask's sizes right-aligned to [B, H, S, S]; checks that each broadcasts.
std::vector<int64_t> mask_sizes(const KernelContext& ctx, const Tensor& mask, int64_t batch, int64_t heads, int64_t seq) {
  if (mask.rank() < 1 || mask.rank() > 4) ctx.fail("mask " + mask.type_string() + " must have rank 1 to 4");
  std::vector<int64_t> sizes(4 - static_cast<size_t>(mask.rank()), 1);
  for (int64_t s : mask.sizes()) sizes.push_back(s);
  const int64_t full[4] = {batch, heads, seq, seq};
  for (size_t i = 0; i < 4; ++i) {
    if (sizes[i] != 1 && sizes[i] != full[i]) {
      ctx.fail("mask " + mask.type_string() + " does not broadcast to [" + std::to_string(batch) + "," +
               std::to_string(heads) + "," + std::to_string(seq) + "," + std::to_string(seq) + "]");
    }
  }
  if (sizes[3] != seq) ctx.fail("mask " + mask.type_string() + " must have the key length " + std::to_string(seq) + " last");
  return sizes;
}

// Reference loops (f64, and the definition the tests hold oneDNN to).
template <typename T>
void attention_reference(const T* q, const T* k, const T* v, const T* mask, const std::vector<int64_t>& mask_dims,
                         int64_t batch, int64_t seq, int64_t heads, int64_t dim, double scale, T* y) {
  const int64_t width = heads * dim;
  std::vector<double> row(static_cast<size_t>(seq));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t i = 0; i < seq; ++i) {
        double best = -INFINITY;
        for (int64_t j = 0; j < seq; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < dim; ++d) {
            dot += static_cast<double>(q[(b * seq + i) * width + h * dim + d]) * static_cast<double>(k[(b * seq + j) * width + h * dim + d]);
          }
          double value = scale * dot;
          if (mask != nullptr) {
            int64_t mb = mask_dims[0] == 1 ? 0 : b, mh = mask_dims[1] == 1 ? 0 : h, mi = mask_dims[2] == 1 ? 0 : i;
            value += static_cast<double>(mask[((mb * mask_dims[1] + mh) * mask_dims[2] + mi) * seq + j]);
          }
          row[static_cast<size_t>(j)] = value;
          best = std::max(best, value);
        }
        double sum = 0;
        for (double& value : row) sum += (value = std::exp(value - best));
        for (int64_t d = 0; d < dim; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < seq; ++j) acc += row[static_cast<size_t>(j)] / sum * static_cast<double>(v[(b * seq + j) * width + h * dim + d]);
          y[(b * seq + i) * width + h * dim + d] = static_cast<T>(acc);
        }
      }
    }
  }
}

using dnnl::memory;

// The two strided matmuls of one batch item, cached per problem.
struct AttentionPrimitives {
  dnnl::matmul scores, context;
  memory::desc q, k_t, s, v, y, mask;
  memory::desc scores_scratchpad, context_scratchpad;
};

class AttentionKernel final : public OpKernel {
 public:
  explicit AttentionKernel(const Node& node)
      : heads_(attention_num_heads(node)), scale_(node.has_attr("scale") ? std::optional<double>(node.attr("scale").f()) : std::nullopt) {}

  void compute(KernelContext& ctx) override {
    const Tensor& q = ctx.input(0);
    const Tensor& k = ctx.input(1);
    const Tensor& v = ctx.input(2);
    const Tensor* mask = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    const AttentionGeometry geometry = attention_geometry(ctx, heads_, scale_);
    const int64_t batch = geometry.batch, seq = geometry.seq, dim = geometry.dim;
    const double scale = geometry.scale;
    const std::vector<int64_t>& mdims = geometry.mask_sizes;
    Tensor& y = ctx.allocate_output(0, q.dtype(), q.sizes(), KernelContext::Fill::kUninitialized);
    if (y.num_elements() == 0) return;
    if (q.dtype() == DType::kFloat64) {
      attention_reference<double>(q.data<double>(), k.data<double>(), v.data<double>(), mask ? mask->data<double>() : nullptr,
                                  mdims, batch, seq, heads_, dim, scale, y.data<double>());
      return;
    }
    try {
      run_dnnl(q, k, v, mask, mdims, batch, seq, dim, static_cast<float>(scale), y);
    } catch (const dnnl::error& e) {
      ctx.fail(std::string("oneDNN failed: ") + e.what());
    }
  }

 private:
  void run_dnnl(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, const std::vector<int64_t>& mdims,
                int64_t batch, int64_t seq, int64_t dim, float scale, Tensor& y) {
    const int64_t width = heads_ * dim;
    std::shared_ptr<AttentionPrimitives> p = primitives(q.dtype(), seq, dim, scale, mdims);
    Tensor scores = Tensor::uninitialized(q.dtype(), {heads_, seq, seq});
    dnnl::stream stream(engine_);
    const size_t element = dtype_size(q.dtype());
    for (int64_t b = 0; b < batch; ++b) {
      const size_t offset = static_cast<size_t>(b * seq * width) * element;
      memory q_mem(p->q, engine_, static_cast<char*>(q.raw_data()) + offset);
      memory k_mem(p->k_t, engine_, static_cast<char*>(k.raw_data()) + offset);
      memory v_mem(p->v, engine_, static_cast<char*>(v.raw_data()) + offset);
      memory s_mem(p->s, engine_, scores.raw_data());
      memory y_mem(p->y, engine_, static_cast<char*>(y.raw_data()) + offset);
      std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, q_mem}, {DNNL_ARG_WEIGHTS, k_mem}, {DNNL_ARG_DST, s_mem}};
      if (mask != nullptr) {
        size_t mask_offset = mdims[0] == 1 ? 0 : static_cast<size_t>(b * mdims[1] * mdims[2] * seq) * element;
        args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                     memory(p->mask, engine_, static_cast<char*>(mask->raw_data()) + mask_offset));
      }
      args.emplace(DNNL_ARG_SCRATCHPAD, thread_scratchpad(p->scores_scratchpad, engine_));
      p->scores.execute(stream, args);
      stream.wait();
      softmax_.forward(q.dtype(), AxisSplit{heads_ * seq, seq, 1}, /*log=*/false, scores.raw_data(), scores.raw_data());
      p->context.execute(stream, {{DNNL_ARG_SRC, s_mem},
                                  {DNNL_ARG_WEIGHTS, v_mem},
                                  {DNNL_ARG_DST, y_mem},
                                  {DNNL_ARG_SCRATCHPAD, thread_scratchpad(p->context_scratchpad, engine_)}});
      stream.wait();
    }
  }

  std::shared_ptr<AttentionPrimitives> primitives(DType dtype, int64_t seq, int64_t dim, float scale,
                                                  const std::vector<int64_t>& mdims) {
    auto key = std::make_tuple(dtype, seq, dim, scale, mdims);
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = cache_.find(key);
    if (found != cache_.end()) return found->second;
    const int64_t h = heads_, width = heads_ * dim;
    memory::data_type type = dtype == DType::kBFloat16 ? memory::data_type::bf16 : memory::data_type::f32;
    auto p = std::make_shared<AttentionPrimitives>();
    // Head h of row i sits at i * width + h * dim: heads are the matmuls' batch axis.
    p->q = memory::desc({h, seq, dim}, type, {dim, width, 1});
    p->k_t = memory::desc({h, dim, seq}, type, {dim, 1, width});
    p->s = memory::desc({h, seq, seq}, type, {seq * seq, seq, 1});
    p->v = memory::desc({h, seq, dim}, type, {dim, width, 1});
    p->y = p->v;
    dnnl::primitive_attr attr = user_scratchpad();
    attr.set_output_scales(0, {scale});
    if (!mdims.empty()) {
      p->mask = memory::desc({mdims[1], mdims[2], seq}, type, {mdims[2] * seq, seq, 1});
      dnnl::post_ops ops;
      ops.append_binary(dnnl::algorithm::binary_add, p->mask);
      attr.set_post_ops(ops);
    }
    dnnl::matmul::primitive_desc scores(dnnl::matmul::desc(p->q, p->k_t, p->s), attr, engine_);
    dnnl::matmul::primitive_desc context(dnnl::matmul::desc(p->s, p->v, p->y), user_scratchpad(), engine_);
    p->scores = dnnl::matmul(scores);
    p->context = dnnl::matmul(context);
    p->scores_scratchpad = scores.scratchpad_desc();
    p->context_scratchpad = context.scratchpad_desc();
    cache_.emplace(key, p);
    return p;
  }

  int64_t heads_;
  std::optional<double> scale_;
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  std::mutex mutex_;
  std::map<std::tuple<DType, int64_t, int64_t, float, std::vector<int64_t>>, std::shared_ptr<AttentionPrimitives>> cache_;
  DnnlSoftmax softmax_;
};

}  // namespace

int64_t attention_num_heads(const Node& node) {
  int64_t heads = node.has_attr("num_heads") ? node.attr("num_heads").i() : 0;
  if (heads <= 0) {
    throw Error(ErrorKind::kInvalidArgument, "Attention '" + node.name() + "': num_heads must be positive, got " +
                                                 std::to_string(heads))
        .with_node(node.name());
  }
  return heads;
}

AttentionGeometry attention_geometry(const KernelContext& ctx, int64_t heads, std::optional<double> scale) {
  const Tensor& q = ctx.input(0);
  const Tensor& k = ctx.input(1);
  const Tensor& v = ctx.input(2);
  const Tensor* mask = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  if (q.rank() != 3 || k.sizes() != q.sizes() || v.sizes() != q.sizes() || k.dtype() != q.dtype() || v.dtype() != q.dtype()) {
    ctx.fail("Q, K and V must be [B, S, H*D] of one shape and dtype, got " + q.type_string() + ", " + k.type_string() +
             ", " + v.type_string());
  }
  AttentionGeometry geometry;
  geometry.batch = q.sizes()[0];
  geometry.seq = q.sizes()[1];
  geometry.heads = heads;
  const int64_t width = q.sizes()[2];
  if (width % heads != 0) ctx.fail("hidden size " + std::to_string(width) + " is not divisible by " + std::to_string(heads) + " heads");
  geometry.dim = width / heads;
  geometry.scale = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(geometry.dim, 1)));
  if (mask != nullptr) {
    if (mask->dtype() != q.dtype()) ctx.fail("mask " + mask->type_string() + " must have Q's dtype");
    geometry.mask_sizes = mask_sizes(ctx, *mask, geometry.batch, heads, geometry.seq);
  }
  return geometry;
}

void register_attention_schemas(OpRegistry& registry) {
  OpSchema attention("Attention");
  attention.input("Q", "T")
      .input("K", "T")
      .input("V", "T")
      .input("mask", "T", Arity::kOptional)
      .output("Y", "T")
      .type_constraint("T", kAttentionTypes)
      .required_attr("num_heads", AttrType::kInt)
      .attr("scale", AttrType::kFloat)
      .infer([](InferenceContext& ctx) {
        const TensorType* q = ctx.input_type(0);
        if (q == nullptr) return;
        int64_t heads = attention_num_heads(ctx.node());
        if (q->shape.has_rank()) {
          if (q->shape.rank() != 3) ctx.fail("Q " + q->shape.to_string() + " must be [B, S, H*D]");
          const Dim& width = q->shape[2];
          if (width.is_static() && width.size() % heads != 0) {
            ctx.fail("hidden size " + width.to_string() + " is not divisible by " + std::to_string(heads) + " heads");
          }
        }
        for (size_t i = 1; i < 3; ++i) {
          const TensorType* other = ctx.input_type(i);
          if (other != nullptr && other->shape.has_rank() && q->shape.has_rank() && other->shape.rank() != 3) {
            ctx.fail(std::string(i == 1 ? "K " : "V ") + other->shape.to_string() + " must be [B, S, H*D] like Q");
          }
        }
        ctx.set_output_type(0, *q);
      })
      .doc("scaled dot-product attention over packed heads: Q, K, V, Y [B, S, H*D], attributes num_heads and "
           "scale (default 1/sqrt(D)), optional additive mask broadcasting to [B, H, S, S]");
  registry.add(std::move(attention));
}

void register_attention_cpu_kernels(KernelRegistry& registry) {
  registry.add("Attention", DeviceType::kCpu, kAttentionTypes,
               [](const Node& node) { return std::make_unique<AttentionKernel>(node); });
}

}  // namespace weir
