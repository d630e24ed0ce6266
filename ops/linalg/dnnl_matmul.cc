#include "ops/linalg/dnnl_matmul.h"

#include <dnnl.hpp>

#include <optional>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "ops/dnnl_eltwise.h"
#include "ops/dnnl_packed_weights.h"
#include "ops/dnnl_scratchpad.h"
#include "core/half.h"

namespace weir {

namespace {

using dnnl::memory;

memory::data_type dnnl_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return memory::data_type::f32;
    case DType::kBFloat16: return memory::data_type::bf16;
    default: throw Error(ErrorKind::kInternal, "no oneDNN matmul for " + std::string(dtype_name(dtype)));
  }
}

// A [batch, rows, cols] matrix stored row-major, or transposed ([batch, cols, rows]).
memory::desc matrix_desc(DType dtype, int64_t batch, int64_t rows, int64_t cols, bool transposed) {
  memory::dims dims = {batch, rows, cols};
  memory::dims strides = transposed ? memory::dims{rows * cols, 1, rows} : memory::dims{rows * cols, cols, 1};
  return memory::desc(dims, dnnl_type(dtype), strides);
}

}  // namespace

// One cached primitive, and B packed into its preferred layout when B is constant.
struct CachedMatmul {
  std::shared_ptr<dnnl::matmul> primitive;
  memory::desc b_wanted;
  memory::desc scratchpad;
  PackedWeights packed_b;  // used when B is constant
};

struct DnnlMatmul::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::mutex mutex;
  std::map<decltype(MatmulProblem().key()), std::shared_ptr<CachedMatmul>> primitives;
  AdoptedPacks adopted;  // packed B matrices a plan file brought

  std::shared_ptr<CachedMatmul> primitive(const MatmulProblem& p) {
    std::lock_guard<std::mutex> lock(mutex);
    auto found = primitives.find(p.key());
    if (found != primitives.end()) return found->second;
    memory::desc b_plain = matrix_desc(p.dtype, p.batch, p.k, p.n, p.transpose_b);
    memory::desc b_desc = p.constant_b ? memory::desc(b_plain.dims(), b_plain.data_type(), memory::format_tag::any) : b_plain;
    memory::desc a_desc = matrix_desc(p.dtype, p.batch, p.m, p.k, p.transpose_a);
    memory::desc c_desc = matrix_desc(p.output_dtype(), p.batch, p.m, p.n, false);
    dnnl::primitive_attr attr = user_scratchpad();
    if (p.alpha != 1.0f) attr.set_output_scales(0, {p.alpha});
    if (!p.activation.none()) {
      dnnl::post_ops ops;
      auto [algorithm, alpha, beta] = dnnl_eltwise(p.activation);
      ops.append_eltwise(1.0f, algorithm, alpha, beta);
      attr.set_post_ops(ops);
    }
    std::optional<dnnl::matmul::primitive_desc> pd;
    if (p.bias) {
      memory::desc bias_desc({1, 1, p.n}, dnnl_type(p.dtype), memory::format_tag::abc);
      pd.emplace(dnnl::matmul::desc(a_desc, b_desc, bias_desc, c_desc), attr, engine);
    } else {
      pd.emplace(dnnl::matmul::desc(a_desc, b_desc, c_desc), attr, engine);
    }
    auto created = std::make_shared<CachedMatmul>();
    created->primitive = std::make_shared<dnnl::matmul>(*pd);
    created->b_wanted = pd->weights_desc();
    created->scratchpad = pd->scratchpad_desc();
    primitives.emplace(p.key(), created);
    return created;
  }

  void execute(const MatmulProblem& p, const void* a, const void* b, void* c, const void* bias) {
    std::shared_ptr<CachedMatmul> cached = primitive(p);
    // A stream per call: streams are cheap on the CPU and not shared across threads.
    dnnl::stream stream(engine);
    memory a_mem(matrix_desc(p.dtype, p.batch, p.m, p.k, p.transpose_a), engine, const_cast<void*>(a));
    memory b_mem = p.constant_b ? cached->packed_b.get(b, matrix_desc(p.dtype, p.batch, p.k, p.n, p.transpose_b), cached->b_wanted, engine, stream, &adopted)
                                : memory(matrix_desc(p.dtype, p.batch, p.k, p.n, p.transpose_b), engine, const_cast<void*>(b));
    memory c_mem(matrix_desc(p.output_dtype(), p.batch, p.m, p.n, false), engine, c);
    std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}};
    if (p.bias) {
      args.emplace(DNNL_ARG_BIAS, memory(memory::desc({1, 1, p.n}, dnnl_type(p.dtype), memory::format_tag::abc), engine,
                                         const_cast<void*>(bias)));
    }
    args.emplace(DNNL_ARG_SCRATCHPAD, thread_scratchpad(cached->scratchpad, engine));
    cached->primitive->execute(stream, args);
    stream.wait();
  }
};

DnnlMatmul::DnnlMatmul() : impl_(std::make_unique<Impl>()) {}
DnnlMatmul::~DnnlMatmul() = default;

std::vector<PackedConstant> DnnlMatmul::packed_weights() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return export_packs(impl_->primitives, [](const auto& cached) -> const PackedWeights& { return cached.packed_b; });
}

void DnnlMatmul::adopt_packed_weights(std::vector<PackedConstant> packs) { impl_->adopted.add(std::move(packs)); }

bool DnnlMatmul::supports(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kBFloat16 || dtype == DType::kFloat16;
}

void DnnlMatmul::run(const MatmulProblem& problem, const void* a, const void* b, void* c, const void* bias) {
  if (problem.bias && bias == nullptr) throw Error(ErrorKind::kInternal, "a matmul with bias needs the bias");
  if (problem.output_dtype() != problem.dtype && problem.output_dtype() != DType::kFloat32) {
    throw Error(ErrorKind::kInternal, "a matmul writes a wider C only as f32");
  }
  // Empty products leave C as allocated: zeros, the sum over an empty k.
  if (problem.batch == 0 || problem.m == 0 || problem.n == 0 || problem.k == 0) return;
  try {
    if (problem.dtype != DType::kFloat16) {
      impl_->execute(problem, a, b, c, bias);
      return;
    }
    // f16: widen to f32, multiply, narrow the result.
    auto widen = [](const void* source, int64_t count) {
      std::vector<float> wide(static_cast<size_t>(count));
      const auto* halves = static_cast<const Float16*>(source);
      for (size_t i = 0; i < wide.size(); ++i) wide[i] = halves[i].to_float();
      return wide;
    };
    std::vector<float> wide_a = widen(a, problem.batch * problem.m * problem.k);
    std::vector<float> wide_b = widen(b, problem.batch * problem.k * problem.n);
    std::vector<float> wide_bias = problem.bias ? widen(bias, problem.n) : std::vector<float>();
    MatmulProblem f32 = problem;
    f32.dtype = DType::kFloat32;
    f32.c_dtype = DType::kUndefined;
    f32.constant_b = false;  // the widened copy is new on every call
    if (problem.output_dtype() == DType::kFloat32) {  // a wide C: the f32 product is the result
      impl_->execute(f32, wide_a.data(), wide_b.data(), c, problem.bias ? wide_bias.data() : nullptr);
      return;
    }
    std::vector<float> wide_c(static_cast<size_t>(problem.batch * problem.m * problem.n));
    impl_->execute(f32, wide_a.data(), wide_b.data(), wide_c.data(), problem.bias ? wide_bias.data() : nullptr);
    auto* out = static_cast<Float16*>(c);
    for (size_t i = 0; i < wide_c.size(); ++i) out[i] = Float16(wide_c[i]);
  } catch (const dnnl::error& e) {
    throw Error(ErrorKind::kInternal, std::string("oneDNN matmul failed: ") + e.what());
  }
}

}  // namespace weir
