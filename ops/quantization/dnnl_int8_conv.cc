#include "ops/quantization/dnnl_int8_conv.h"

#include <dnnl.hpp>

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>

#include "core/error.h"
#include "ops/dnnl_packed_weights.h"
#include "ops/dnnl_scratchpad.h"

namespace weir {

namespace {

using dnnl::memory;
using Tag = memory::format_tag;

memory::data_type int8_type(DType dtype) {
  return dtype == DType::kInt8 ? memory::data_type::s8 : memory::data_type::u8;
}

memory::dims spatial(const std::array<int64_t, 3>& values, size_t rank, int64_t minus = 0) {
  memory::dims dims;
  for (size_t i = 0; i < rank; ++i) dims.push_back(values[i] - minus);
  return dims;
}

// The plain (user) layouts of x, w and y.
struct PlainDescs {
  memory::desc x, w, y;
};

PlainDescs plain_descs(const ConvProblem& p, const Int8ConvSetup& setup) {
  static const Tag first_tags[] = {Tag::ncw, Tag::nchw, Tag::ncdhw};
  static const Tag last_tags[] = {Tag::nwc, Tag::nhwc, Tag::ndhwc};
  static const Tag weight_tags[] = {Tag::oiw, Tag::oihw, Tag::oidhw};
  static const Tag group_tags[] = {Tag::goiw, Tag::goihw, Tag::goidhw};
  const size_t r = p.spatial_rank - 1;
  const Tag data_tag = setup.channels_last ? last_tags[r] : first_tags[r];
  PlainDescs d;
  d.x = memory::desc(memory::dims(p.in_sizes()), int8_type(setup.x_dtype), data_tag);
  d.y = memory::desc(memory::dims(p.out_sizes()), int8_type(setup.y_dtype), data_tag);
  memory::dims kernel = spatial(p.kernel, p.spatial_rank);
  memory::dims w = p.group == 1 ? memory::dims{p.out_channels, p.in_channels}
                                : memory::dims{p.group, p.out_channels / p.group, p.in_channels / p.group};
  w.insert(w.end(), kernel.begin(), kernel.end());
  d.w = memory::desc(w, memory::data_type::s8, p.group == 1 ? weight_tags[r] : group_tags[r]);
  return d;
}

memory::desc any_like(const memory::desc& plain) { return memory::desc(plain.dims(), plain.data_type(), Tag::any); }

// One cached primitive with the reorders between the plain and its layouts.
struct Cached {
  dnnl::convolution_forward primitive;
  PlainDescs plain;
  memory::desc x_wanted, w_wanted, y_wanted, bias, scratchpad;
  std::optional<dnnl::reorder> x_to_wanted, w_to_wanted, y_to_plain;
  std::optional<dnnl::reorder> addend_to_wanted;  // a sum on a y of another layout than the user's
  PackedWeights packed_weights;
  // Reorder targets of one run; whoever holds `busy` uses them, a
  // concurrent run allocates its own.
  std::mutex busy;
  std::optional<memory> x_buffer, w_buffer, y_buffer;
};

using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, size_t, std::array<int64_t, 3>, std::array<int64_t, 3>,
                       std::array<int64_t, 3>, std::array<int64_t, 3>, std::array<int64_t, 3>, std::array<int64_t, 3>,
                       std::array<int64_t, 3>, DType, DType, std::vector<float>, bool, bool, bool, bool, bool,
                       bool, float, int32_t>;

Key key_of(const ConvProblem& p, const Int8ConvSetup& s) {
  return {p.batch,      p.in_channels, p.out_channels, p.group,          p.spatial_rank,  p.in,
          p.out,        p.kernel,      p.strides,      p.dilations,      p.pads_begin,    p.pads_end,
          s.x_dtype,    s.y_dtype,     s.multipliers,  s.relu,           s.with_bias,     s.channels_last,
          s.x_zero_nonzero, s.y_zero_nonzero, s.sum, s.sum_scale, s.sum_zero};
}

// oneDNN's reference implementations are its correctness baselines, many
// times slower than Weir's own loops: those problems go to the loops.
bool is_reference_implementation(const dnnl::primitive_desc_base& pd) {
  std::string name = pd.impl_info_str();
  return name.rfind("ref", 0) == 0;
}

}  // namespace

struct DnnlInt8Conv::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::mutex mutex;
  std::map<Key, std::shared_ptr<Cached>> cache;  // null: oneDNN has no fast kernel
  AdoptedPacks adopted;  // packed weights a plan file brought

  std::shared_ptr<Cached> get(const ConvProblem& p, const Int8ConvSetup& setup) {
    Key key = key_of(p, setup);
    std::lock_guard<std::mutex> lock(mutex);
    auto found = cache.find(key);
    if (found != cache.end()) return found->second;
    std::shared_ptr<Cached> created;
    try {
      created = build(p, setup);
    } catch (const dnnl::error&) {
      created = nullptr;  // unimplemented for these types or attributes
    }
    cache.emplace(std::move(key), created);
    return created;
  }

  std::shared_ptr<Cached> build(const ConvProblem& p, const Int8ConvSetup& setup) {
    PlainDescs d = plain_descs(p, setup);
    dnnl::primitive_attr attr = user_scratchpad();
    // Output scales apply to the s32 sum plus the bias (oneDNN 2.x int8
    // semantics), then post-ops, then the destination zero point.
    attr.set_output_scales(setup.multipliers.size() == 1 ? 0 : 1 << 1, setup.multipliers);
    if (setup.x_zero_nonzero) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
    if (setup.y_zero_nonzero) attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
    // Post-ops run in order: the residual sum first, then the Relu.
    dnnl::post_ops ops;
    if (setup.sum) ops.append_sum(setup.sum_scale, setup.sum_zero);
    if (setup.relu) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    if (ops.len() > 0) attr.set_post_ops(ops);
    memory::dims strides = spatial(p.strides, p.spatial_rank), dilates = spatial(p.dilations, p.spatial_rank, 1);
    memory::dims pl = spatial(p.pads_begin, p.spatial_rank), pr = spatial(p.pads_end, p.spatial_rank);
    memory::desc bias({p.out_channels}, memory::data_type::s32, Tag::x);
    std::optional<dnnl::convolution_forward::desc> desc;
    if (setup.with_bias) {
      desc.emplace(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, any_like(d.x),
                   any_like(d.w), bias, any_like(d.y), strides, dilates, pl, pr);
    } else {
      desc.emplace(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, any_like(d.x),
                   any_like(d.w), any_like(d.y), strides, dilates, pl, pr);
    }
    dnnl::convolution_forward::primitive_desc pd(*desc, attr, engine);
    if (is_reference_implementation(pd)) return nullptr;
    auto c = std::make_shared<Cached>();
    c->primitive = dnnl::convolution_forward(pd);
    c->plain = d;
    c->x_wanted = pd.src_desc();
    c->w_wanted = pd.weights_desc();
    c->y_wanted = pd.dst_desc();
    c->bias = bias;
    c->scratchpad = pd.scratchpad_desc();
    if (d.x != c->x_wanted) c->x_to_wanted = dnnl::reorder(dnnl::reorder::primitive_desc(engine, d.x, engine, c->x_wanted));
    if (d.w != c->w_wanted) c->w_to_wanted = dnnl::reorder(dnnl::reorder::primitive_desc(engine, d.w, engine, c->w_wanted));
    if (d.y != c->y_wanted) c->y_to_plain = dnnl::reorder(dnnl::reorder::primitive_desc(engine, c->y_wanted, engine, d.y));
    if (setup.sum && d.y != c->y_wanted) {
      c->addend_to_wanted = dnnl::reorder(dnnl::reorder::primitive_desc(engine, d.y, engine, c->y_wanted));
    }
    return c;
  }

  void run(Cached& c, const Int8ConvSetup& setup, const Int8ConvRun& r, bool constant_weights) {
    std::unique_lock<std::mutex> own(c.busy, std::try_to_lock);
    std::optional<memory> local_x, local_w, local_y;
    auto buffer = [&](std::optional<memory>& shared, std::optional<memory>& local, const memory::desc& desc) -> memory& {
      std::optional<memory>& slot = own.owns_lock() ? shared : local;
      if (!slot) slot.emplace(desc, engine);
      return *slot;
    };
    dnnl::stream stream(engine);
    memory user_x(c.plain.x, engine, const_cast<void*>(r.x));
    memory user_w(c.plain.w, engine, const_cast<int8_t*>(r.w));
    memory user_y(c.plain.y, engine, r.y);
    std::unordered_map<int, memory> args;
    if (c.x_to_wanted) {
      memory& x = buffer(c.x_buffer, local_x, c.x_wanted);
      c.x_to_wanted->execute(stream, user_x, x);
      args.emplace(DNNL_ARG_SRC, x);
    } else {
      args.emplace(DNNL_ARG_SRC, user_x);
    }
    if (!c.w_to_wanted) {
      args.emplace(DNNL_ARG_WEIGHTS, user_w);
    } else if (constant_weights) {
      args.emplace(DNNL_ARG_WEIGHTS, c.packed_weights.get(r.w, c.plain.w, c.w_wanted, engine, stream, &adopted));
    } else {
      memory& w = buffer(c.w_buffer, local_w, c.w_wanted);
      c.w_to_wanted->execute(stream, user_w, w);
      args.emplace(DNNL_ARG_WEIGHTS, w);
    }
    memory& y = c.y_to_plain ? buffer(c.y_buffer, local_y, c.y_wanted) : user_y;
    // The sum post-op adds what the destination holds: the addend, in the
    // user's y on entry, goes to the primitive's layout first.
    if (c.addend_to_wanted) c.addend_to_wanted->execute(stream, user_y, y);
    args.emplace(DNNL_ARG_DST, y);
    if (setup.with_bias) args.emplace(DNNL_ARG_BIAS, memory(c.bias, engine, const_cast<int32_t*>(r.bias)));
    int32_t x_zero = r.x_zero, y_zero = r.y_zero;
    memory::desc zero_desc({1}, memory::data_type::s32, Tag::x);
    if (setup.x_zero_nonzero) args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, memory(zero_desc, engine, &x_zero));
    if (setup.y_zero_nonzero) args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, memory(zero_desc, engine, &y_zero));
    args.emplace(DNNL_ARG_SCRATCHPAD, thread_scratchpad(c.scratchpad, engine));
    c.primitive.execute(stream, args);
    if (c.y_to_plain) c.y_to_plain->execute(stream, y, user_y);
    stream.wait();
  }
};

DnnlInt8Conv::DnnlInt8Conv() : impl_(std::make_unique<Impl>()) {}

std::vector<PackedConstant> DnnlInt8Conv::packed_weights() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return export_packs(impl_->cache, [](const auto& cached) -> const PackedWeights& { return cached.packed_weights; });
}

void DnnlInt8Conv::adopt_packed_weights(std::vector<PackedConstant> packs) { impl_->adopted.add(std::move(packs)); }
DnnlInt8Conv::~DnnlInt8Conv() = default;

bool DnnlInt8Conv::forward(const ConvProblem& p, const Int8ConvSetup& setup, const Int8ConvRun& run,
                           bool constant_weights) {
  if (p.spatial_rank < 1 || p.spatial_rank > 3 || setup.multipliers.empty()) return false;
  std::shared_ptr<Cached> cached = impl_->get(p, setup);
  if (!cached) return false;
  try {
    impl_->run(*cached, setup, run, constant_weights);
  } catch (const dnnl::error& e) {
    throw Error(ErrorKind::kInternal, std::string("oneDNN int8 convolution failed: ") + e.what());
  }
  return true;
}

}  // namespace weir
