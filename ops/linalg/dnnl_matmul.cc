#include "ops/linalg/dnnl_matmul.h"

#include <dnnl.hpp>

#include <vector>

#include "core/error.h"
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

struct DnnlMatmul::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::mutex mutex;
  std::map<decltype(MatmulProblem().key()), std::shared_ptr<dnnl::matmul>> primitives;

  std::shared_ptr<dnnl::matmul> primitive(const MatmulProblem& p) {
    std::lock_guard<std::mutex> lock(mutex);
    auto found = primitives.find(p.key());
    if (found != primitives.end()) return found->second;
    dnnl::matmul::desc desc(matrix_desc(p.dtype, p.batch, p.m, p.k, p.transpose_a),
                            matrix_desc(p.dtype, p.batch, p.k, p.n, p.transpose_b),
                            matrix_desc(p.dtype, p.batch, p.m, p.n, false));
    dnnl::primitive_attr attr;
    if (p.alpha != 1.0f) attr.set_output_scales(0, {p.alpha});
    auto created = std::make_shared<dnnl::matmul>(dnnl::matmul::primitive_desc(desc, attr, engine));
    primitives.emplace(p.key(), created);
    return created;
  }

  void execute(const MatmulProblem& p, const void* a, const void* b, void* c) {
    std::shared_ptr<dnnl::matmul> matmul = primitive(p);
    // A stream per call: streams are cheap on the CPU and not shared across threads.
    dnnl::stream stream(engine);
    memory a_mem(matrix_desc(p.dtype, p.batch, p.m, p.k, p.transpose_a), engine, const_cast<void*>(a));
    memory b_mem(matrix_desc(p.dtype, p.batch, p.k, p.n, p.transpose_b), engine, const_cast<void*>(b));
    memory c_mem(matrix_desc(p.dtype, p.batch, p.m, p.n, false), engine, c);
    matmul->execute(stream, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}});
    stream.wait();
  }
};

DnnlMatmul::DnnlMatmul() : impl_(std::make_unique<Impl>()) {}
DnnlMatmul::~DnnlMatmul() = default;

bool DnnlMatmul::supports(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kBFloat16 || dtype == DType::kFloat16;
}

void DnnlMatmul::run(const MatmulProblem& problem, const void* a, const void* b, void* c) {
  // Empty products leave C as allocated: zeros, the sum over an empty k.
  if (problem.batch == 0 || problem.m == 0 || problem.n == 0 || problem.k == 0) return;
  try {
    if (problem.dtype != DType::kFloat16) {
      impl_->execute(problem, a, b, c);
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
    std::vector<float> wide_c(static_cast<size_t>(problem.batch * problem.m * problem.n));
    MatmulProblem f32 = problem;
    f32.dtype = DType::kFloat32;
    impl_->execute(f32, wide_a.data(), wide_b.data(), wide_c.data());
    auto* out = static_cast<Float16*>(c);
    for (size_t i = 0; i < wide_c.size(); ++i) out[i] = Float16(wide_c[i]);
  } catch (const dnnl::error& e) {
    throw Error(ErrorKind::kInternal, std::string("oneDNN matmul failed: ") + e.what());
  }
}

}  // namespace weir
