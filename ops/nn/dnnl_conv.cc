#include "ops/nn/dnnl_conv.h"

#include <dnnl.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "ops/dnnl_eltwise.h"
#include "ops/dnnl_packed_weights.h"
#include "ops/dnnl_scratchpad.h"

namespace weir {

namespace {

using dnnl::memory;
using Tag = memory::format_tag;

using Direction = ConvDirection;

memory::data_type dnnl_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return memory::data_type::f32;
    case DType::kBFloat16: return memory::data_type::bf16;
    default: throw Error(ErrorKind::kInternal, "no oneDNN convolution for " + std::string(dtype_name(dtype)));
  }
}

memory::dims spatial(const std::array<int64_t, 3>& values, size_t rank, int64_t minus = 0) {
  memory::dims dims;
  for (size_t i = 0; i < rank; ++i) dims.push_back(values[i] - minus);
  return dims;
}

struct Descs {
  memory::desc in, weight, out, bias;  // plain user layouts
};

// `weight_dtype`: the weights' (or their gradient's) when not `dtype`.
Descs plain_descs(DType dtype, const ConvProblem& p, bool channels_last, DType weight_dtype = DType::kUndefined) {
  static const Tag first_tags[] = {Tag::ncw, Tag::nchw, Tag::ncdhw};
  static const Tag last_tags[] = {Tag::nwc, Tag::nhwc, Tag::ndhwc};
  const Tag* data_tags = channels_last ? last_tags : first_tags;
  static const Tag weight_tags[] = {Tag::oiw, Tag::oihw, Tag::oidhw};
  static const Tag group_tags[] = {Tag::goiw, Tag::goihw, Tag::goidhw};
  memory::data_type type = dnnl_type(dtype);
  memory::data_type weight_type = weight_dtype == DType::kUndefined ? type : dnnl_type(weight_dtype);
  size_t r = p.spatial_rank - 1;
  Descs d;
  d.in = memory::desc(memory::dims(p.in_sizes()), type, data_tags[r]);
  d.out = memory::desc(memory::dims(p.out_sizes()), type, data_tags[r]);
  memory::dims kernel = spatial(p.kernel, p.spatial_rank);
  if (p.group == 1) {
    memory::dims w = {p.out_channels, p.in_channels};
    w.insert(w.end(), kernel.begin(), kernel.end());
    d.weight = memory::desc(w, weight_type, weight_tags[r]);
  } else {
    memory::dims w = {p.group, p.out_channels / p.group, p.in_channels / p.group};
    w.insert(w.end(), kernel.begin(), kernel.end());
    d.weight = memory::desc(w, weight_type, group_tags[r]);
  }
  d.bias = memory::desc({p.out_channels}, type, Tag::x);
  return d;
}

memory::desc any_like(const memory::desc& plain) {
  return memory::desc(plain.dims(), plain.data_type(), Tag::any);
}

// One argument of a cached primitive: the layout the primitive wants, and the
// reorders between it and the plain layout when they differ.
struct Operand {
  int arg = 0;
  memory::desc plain, wanted;
  std::optional<dnnl::reorder> to_wanted, to_plain;

  Operand(int argument, const memory::desc& user, const memory::desc& chosen, bool is_output,
          const dnnl::engine& engine)
      : arg(argument), plain(user), wanted(chosen) {
    if (plain == wanted) return;
    if (is_output) {
      to_plain = dnnl::reorder(dnnl::reorder::primitive_desc(engine, wanted, engine, plain));
    } else {
      to_wanted = dnnl::reorder(dnnl::reorder::primitive_desc(engine, plain, engine, wanted));
    }
  }
};

// What one run binds besides the data pointers: a stream, oneDNN memory
// objects over the caller's tensors and over the thread's scratchpad and
// reorder targets (re-pointed with set_data_handle) and the argument map. Made once per cached primitive and
// reused: building them per call cost 1.5 us, a tenth of a small conv.
// The thread buffers (thread_scratchpad_data) a run binds: its scratchpad,
// the reorder targets of the inputs (source, weights) and of the output.
constexpr int kScratchpadSlot = 0, kInputSlot = 1, kOutputSlot = 3;
static_assert(kOutputSlot < kThreadScratchSlots);

// Re-points `memory` only when the thread's buffer moved (it grew, or
// another thread runs this state): setting a handle is not free (oneDNN
// zero-pads a padded layout's tail on every set), and the buffers move
// rarely. The primitives write their outputs' padding themselves.
void point_at(dnnl::memory& memory, void* data) {
  if (memory.get_data_handle() != data) memory.set_data_handle(data);
}

struct RunState {
  dnnl::stream stream;
  std::vector<dnnl::memory> buffers;      // one per input, the output, the scratchpad (the thread's, bound per run)
  std::vector<dnnl::memory> user_inputs;  // plain views of the caller's inputs
  std::optional<dnnl::memory> bias, user_out, user_addend;
  std::unordered_map<int, dnnl::memory> args;
};

struct Cached {
  dnnl::primitive primitive;
  memory::desc scratchpad;
  std::vector<Operand> inputs;
  Operand output;
  std::optional<memory::desc> bias;  // forward with bias: plain, never reordered
  // Whoever holds `busy` uses `state`; a concurrent run makes its own.
  std::mutex busy;
  std::unique_ptr<RunState> state;
  PackedWeights packed_weights;  // forward with constant weights
  std::optional<dnnl::reorder> addend_to_wanted;  // forward with a sum post-op on a blocked output
};

// The Winograd choice after WEIR_CONV_WINOGRAD (0: never, 1: always), read once.
ConvForwardOptions::Winograd winograd_choice(ConvForwardOptions::Winograd requested) {
  using Winograd = ConvForwardOptions::Winograd;
  static const std::optional<Winograd> forced = []() -> std::optional<Winograd> {
    const char* value = std::getenv("WEIR_CONV_WINOGRAD");
    if (value != nullptr && std::string(value) == "0") return Winograd::kNever;
    if (value != nullptr && std::string(value) == "1") return Winograd::kAlways;
    return std::nullopt;
  }();
  return requested == Winograd::kAuto && forced ? *forced : requested;
}

// Whether a forward conv runs as oneDNN's Winograd (F(2x2, 3x3)) primitive.
// It computes a 3x3 conv with 2.25x fewer multiplies but in blocked layouts,
// so channels-last data is reordered in and out (and a residual addend in):
// measured in ResNet-18/50 and SqueezeNet on this machine's AVX-512 cores,
// that pays when both channel counts are at least 128 (ResNet's 28x28 to
// 7x7 stages) and loses below (the 64-channel 56x56 stage with its residual
// reorders, SqueezeNet's 16-64-channel expands).
bool use_winograd(ConvForwardOptions::Winograd requested, DType dtype, const ConvProblem& p) {
  using Winograd = ConvForwardOptions::Winograd;
  Winograd choice = winograd_choice(requested);
  if (choice == Winograd::kNever || dtype != DType::kFloat32 || p.spatial_rank != 2 || p.group != 1) return false;
  if (p.kernel[0] != 3 || p.kernel[1] != 3 || p.strides[0] != 1 || p.strides[1] != 1 || p.dilations[0] != 1 ||
      p.dilations[1] != 1) {
    return false;
  }
  return choice == Winograd::kAlways || std::min(p.in_channels, p.out_channels) >= 128;
}

dnnl::convolution_forward::primitive_desc forward_pd(const Descs& d, const ConvProblem& p, bool with_bias,
                                                    dnnl::prop_kind kind, const dnnl::engine& engine,
                                                    const dnnl::primitive_attr& attr,
                                                    dnnl::algorithm algorithm = dnnl::algorithm::convolution_direct) {
  memory::dims strides = spatial(p.strides, p.spatial_rank), dilates = spatial(p.dilations, p.spatial_rank, 1);
  memory::dims pl = spatial(p.pads_begin, p.spatial_rank), pr = spatial(p.pads_end, p.spatial_rank);
  if (with_bias) {
    dnnl::convolution_forward::desc desc(kind, algorithm, any_like(d.in), any_like(d.weight), d.bias, any_like(d.out),
                                         strides, dilates, pl, pr);
    return {desc, attr, engine};
  }
  dnnl::convolution_forward::desc desc(kind, algorithm, any_like(d.in), any_like(d.weight), any_like(d.out), strides,
                                       dilates, pl, pr);
  return {desc, attr, engine};
}

}  // namespace

struct DnnlConv::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::mutex mutex;
  using Key = std::tuple<Direction, DType, DType, bool, int, float, float, bool, bool, int, int64_t, int64_t, int64_t, int64_t, size_t, std::array<int64_t, 3>,
                         std::array<int64_t, 3>, std::array<int64_t, 3>, std::array<int64_t, 3>, std::array<int64_t, 3>,
                         std::array<int64_t, 3>, std::array<int64_t, 3>>;
  std::map<Key, std::shared_ptr<Cached>> cache;
  AdoptedPacks adopted;  // packed weights a plan file brought

  std::shared_ptr<Cached> get(Direction direction, DType dtype, DType result_dtype, const ConvProblem& p, bool with_bias,
                              const ConvForwardOptions& options) {
    const FusedActivation& act = options.activation;
    Key key{direction, dtype, result_dtype, with_bias, static_cast<int>(act.kind), act.alpha, act.beta, options.channels_last, options.sum, static_cast<int>(options.winograd), p.batch, p.in_channels, p.out_channels, p.group, p.spatial_rank, p.in, p.out,
            p.kernel, p.strides, p.dilations, p.pads_begin, p.pads_end};
    std::lock_guard<std::mutex> lock(mutex);
    auto found = cache.find(key);
    if (found != cache.end()) return found->second;
    std::shared_ptr<Cached> created = build(direction, dtype, result_dtype, p, with_bias, options);
    cache.emplace(key, created);
    return created;
  }

  std::shared_ptr<Cached> forward(const Descs& d, const ConvProblem& p, bool with_bias, const ConvForwardOptions& options,
                                  const dnnl::primitive_attr& attr, dnnl::algorithm algorithm) {
    auto pd = forward_pd(d, p, with_bias, dnnl::prop_kind::forward_inference, engine, attr, algorithm);
    auto c = std::shared_ptr<Cached>(new Cached{dnnl::convolution_forward(pd), pd.scratchpad_desc(),
                                                {Operand(DNNL_ARG_SRC, d.in, pd.src_desc(), false, engine),
                                                 Operand(DNNL_ARG_WEIGHTS, d.weight, pd.weights_desc(), false, engine)},
                                                Operand(DNNL_ARG_DST, d.out, pd.dst_desc(), true, engine),
                                                std::nullopt, {}, {}, {}, std::nullopt});
    if (with_bias) c->bias = d.bias;
    // The sum post-op adds what the destination holds: the addend goes
    // there first, reordered when the primitive's layout is not the plain one.
    if (options.sum && c->output.to_plain) {
      c->addend_to_wanted = dnnl::reorder(dnnl::reorder::primitive_desc(engine, d.out, engine, pd.dst_desc()));
    }
    return c;
  }

  // `result_dtype`: the output's, `dtype` but for a wide weight gradient (f32 from bf16).
  std::shared_ptr<Cached> build(Direction direction, DType dtype, DType result_dtype, const ConvProblem& p,
                                bool with_bias, const ConvForwardOptions& options) {
    Descs d = plain_descs(dtype, p, options.channels_last);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    // Post-ops run in order: the residual sum first, then the activation.
    dnnl::post_ops ops;
    if (options.sum) ops.append_sum(1.0f);
    if (!options.activation.none()) {
      auto [algorithm, alpha, beta] = dnnl_eltwise(options.activation);
      ops.append_eltwise(1.0f, algorithm, alpha, beta);
    }
    if (ops.len() > 0) attr.set_post_ops(ops);
    memory::dims strides = spatial(p.strides, p.spatial_rank), dilates = spatial(p.dilations, p.spatial_rank, 1);
    memory::dims pl = spatial(p.pads_begin, p.spatial_rank), pr = spatial(p.pads_end, p.spatial_rank);
    if (direction == Direction::kForward) {
      if (use_winograd(options.winograd, dtype, p)) {
        try {
          return forward(d, p, with_bias, options, attr, dnnl::algorithm::convolution_winograd);
        } catch (const dnnl::error&) {
          // oneDNN has no Winograd kernel for this shape or CPU: direct it is.
        }
      }
      return forward(d, p, with_bias, options, attr, dnnl::algorithm::convolution_direct);
    }
    dnnl::primitive_attr plain_attr;
    auto hint = forward_pd(d, p, false, dnnl::prop_kind::forward_training, engine, plain_attr);
    if (direction == Direction::kBackwardData) {
      dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, any_like(d.in),
                                                 any_like(d.weight), any_like(d.out), strides, dilates, pl, pr);
      dnnl::convolution_backward_data::primitive_desc pd(desc, attr, engine, hint);
      return std::shared_ptr<Cached>(new Cached{dnnl::convolution_backward_data(pd), pd.scratchpad_desc(),
                                                {Operand(DNNL_ARG_DIFF_DST, d.out, pd.diff_dst_desc(), false, engine),
                                                 Operand(DNNL_ARG_WEIGHTS, d.weight, pd.weights_desc(), false, engine)},
                                                Operand(DNNL_ARG_DIFF_SRC, d.in, pd.diff_src_desc(), true, engine),
                                                std::nullopt, {}, {}, {}, std::nullopt});
    }
    const memory::desc diff_weight = plain_descs(dtype, p, options.channels_last, result_dtype).weight;
    dnnl::convolution_backward_weights::desc desc(dnnl::algorithm::convolution_direct, any_like(d.in),
                                                  any_like(diff_weight), any_like(d.out), strides, dilates, pl, pr);
    dnnl::convolution_backward_weights::primitive_desc pd(desc, attr, engine, hint);
    return std::shared_ptr<Cached>(new Cached{dnnl::convolution_backward_weights(pd), pd.scratchpad_desc(),
                                              {Operand(DNNL_ARG_DIFF_DST, d.out, pd.diff_dst_desc(), false, engine),
                                               Operand(DNNL_ARG_SRC, d.in, pd.src_desc(), false, engine)},
                                              Operand(DNNL_ARG_DIFF_WEIGHTS, diff_weight, pd.diff_weights_desc(), true, engine),
                                              std::nullopt, {}, {}, {}, std::nullopt});
  }

  std::unique_ptr<RunState> make_state(const Cached& c) {
    auto state = std::make_unique<RunState>(RunState{dnnl::stream(engine), {}, {}, std::nullopt, std::nullopt, std::nullopt, {}});
    // No memory of their own: the thread's buffers, bound per run.
    for (const Operand& operand : c.inputs) state->buffers.emplace_back(operand.wanted, engine, nullptr);
    state->buffers.emplace_back(c.output.wanted, engine, nullptr);
    state->buffers.emplace_back(c.scratchpad, engine, nullptr);
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      const Operand& operand = c.inputs[i];
      state->user_inputs.emplace_back(operand.plain, engine, nullptr);
      state->args.emplace(operand.arg, operand.to_wanted ? state->buffers[i] : state->user_inputs.back());
    }
    if (c.bias) {
      state->bias.emplace(*c.bias, engine, nullptr);
      state->args.emplace(DNNL_ARG_BIAS, *state->bias);
    }
    state->user_out.emplace(c.output.plain, engine, nullptr);
    state->user_addend.emplace(c.output.plain, engine, nullptr);
    state->args.emplace(c.output.arg, c.output.to_plain ? state->buffers[c.inputs.size()] : *state->user_out);
    state->args.emplace(DNNL_ARG_SCRATCHPAD, state->buffers.back());
    return state;
  }

  void run(Direction direction, DType dtype, const ConvProblem& p, const void* a, const void* b, const void* bias,
           void* result, const ConvForwardOptions& options = {}, const void* addend = nullptr,
           DType result_dtype = DType::kUndefined) {
    std::shared_ptr<Cached> c =
        get(direction, dtype, result_dtype == DType::kUndefined ? dtype : result_dtype, p, bias != nullptr, options);
    std::unique_lock<std::mutex> own_state(c->busy, std::try_to_lock);
    std::unique_ptr<RunState> local;
    if (own_state.owns_lock() && !c->state) c->state = make_state(*c);
    if (!own_state.owns_lock()) local = make_state(*c);
    RunState& state = own_state.owns_lock() ? *c->state : *local;
    dnnl::stream& stream = state.stream;
    const void* sources[] = {a, b};
    for (size_t i = 0; i < c->inputs.size(); ++i) {
      const Operand& operand = c->inputs[i];
      memory& user = state.user_inputs[i];
      user.set_data_handle(const_cast<void*>(sources[i]));
      if (!operand.to_wanted) continue;
      if (options.constant_weights && operand.arg == DNNL_ARG_WEIGHTS) {
        state.args[operand.arg] =
            c->packed_weights.get(sources[i], operand.plain, operand.wanted, engine, stream, &adopted);
        continue;
      }
      const int slot = kInputSlot + static_cast<int>(i);
      point_at(state.buffers[i], thread_scratchpad_data(operand.wanted.get_size(), slot));
      operand.to_wanted->execute(stream, user, state.buffers[i]);
    }
    if (c->bias) state.bias->set_data_handle(const_cast<void*>(bias));
    memory& user_out = *state.user_out;
    user_out.set_data_handle(result);
    if (c->output.to_plain) {
      const size_t out_bytes = c->output.wanted.get_size();
      point_at(state.buffers[c->inputs.size()], thread_scratchpad_data(out_bytes, kOutputSlot));
    }
    memory& out = state.args.at(c->output.arg);
    if (options.sum) {
      if (c->addend_to_wanted) {
        state.user_addend->set_data_handle(const_cast<void*>(addend));
        c->addend_to_wanted->execute(stream, *state.user_addend, out);
      } else if (addend != result) {
        std::memcpy(result, addend, c->output.plain.get_size());
      }
    }
    // The thread's scratchpad and reorder targets, shared by every primitive
    // it runs: buffers faulted in once, where one set per primitive was
    // faulted in by each primitive's first run (ResNet-50's 53 convs).
    const size_t scratch_bytes = c->scratchpad.get_size();
    point_at(state.buffers.back(),
             scratch_bytes > 0 ? thread_scratchpad_data(scratch_bytes, kScratchpadSlot) : nullptr);
    c->primitive.execute(stream, state.args);
    if (c->output.to_plain) c->output.to_plain->execute(stream, out, user_out);
    stream.wait();
  }
};

DnnlConv::DnnlConv() : impl_(std::make_unique<Impl>()) {}
DnnlConv::~DnnlConv() = default;

std::vector<PackedConstant> DnnlConv::packed_weights() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return export_packs(impl_->cache, [](const auto& cached) -> const PackedWeights& { return cached.packed_weights; });
}

void DnnlConv::adopt_packed_weights(std::vector<PackedConstant> packs) { impl_->adopted.add(std::move(packs)); }

namespace {
template <typename Fn>
void guarded(const char* what, Fn&& fn) {
  try {
    fn();
  } catch (const dnnl::error& e) {
    throw Error(ErrorKind::kInternal, std::string("oneDNN convolution ") + what + " failed: " + e.what());
  }
}
}  // namespace

void DnnlConv::forward(DType dtype, const ConvProblem& p, const void* in, const void* weight, const void* bias,
                       void* out, const ConvForwardOptions& options, const void* addend) {
  if (options.sum && addend == nullptr) throw Error(ErrorKind::kInternal, "a sum convolution needs its addend");
  guarded("forward", [&] { impl_->run(Direction::kForward, dtype, p, in, weight, bias, out, options, addend); });
}

void DnnlConv::backward_data(DType dtype, const ConvProblem& p, const void* d_out, const void* weight, void* d_in) {
  guarded("backward-data", [&] { impl_->run(Direction::kBackwardData, dtype, p, d_out, weight, nullptr, d_in); });
}

void DnnlConv::backward_weights(DType dtype, const ConvProblem& p, const void* d_out, const void* in,
                                void* d_weight, DType weight_dtype) {
  guarded("backward-weights", [&] {
    impl_->run(Direction::kBackwardWeights, dtype, p, d_out, in, nullptr, d_weight, {}, nullptr, weight_dtype);
  });
}

}  // namespace weir
