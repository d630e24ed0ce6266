#include "ops/cuda/cublaslt_matmul.h"

#include <cstdint>
#include <optional>
#include <string>

#include "core/backend.h"
#include "core/error.h"
#include "ops/cuda/cublaslt_library.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/launch_scratch.h"

namespace weir::cuda {

namespace {

// The most workspace the heuristic may choose an algorithm for (what NVIDIA
// suggests for Hopper); only what the chosen algorithm needs is allocated.
constexpr uint64_t kMaxWorkspaceBytes = 32ull << 20;

cudaDataType_t data_type(const KernelContext& ctx, DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return CUDA_R_32F;
    case DType::kFloat16: return CUDA_R_16F;
    case DType::kBFloat16: return CUDA_R_16BF;
    default: break;
  }
  ctx.fail("cuBLASLt products take f32, f16 or bf16, got " + std::string(dtype_name(dtype)));
}

cublasLtEpilogue_t lt_epilogue(LtEpilogue epilogue) {
  switch (epilogue) {
    case LtEpilogue::kNone: return CUBLASLT_EPILOGUE_DEFAULT;
    case LtEpilogue::kBias: return CUBLASLT_EPILOGUE_BIAS;
    case LtEpilogue::kRelu: return CUBLASLT_EPILOGUE_RELU;
    case LtEpilogue::kReluBias: return CUBLASLT_EPILOGUE_RELU_BIAS;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

bool has_bias(LtEpilogue epilogue) {
  return epilogue == LtEpilogue::kBias || epilogue == LtEpilogue::kReluBias;
}

// The alignment every batch item of an operand has: the largest power of two
// up to 256 dividing its address and its batch stride in bytes.
uint32_t alignment_of(const void* pointer, int64_t stride_bytes = 0) {
  uint64_t bits = reinterpret_cast<uintptr_t>(pointer) | static_cast<uint64_t>(stride_bytes) | 256u;
  return static_cast<uint32_t>(bits & (~bits + 1));
}

// A cuBLASLt descriptor, destroyed with the scope.
template <typename Handle>
class LtObject {
 public:
  using Destroy = cublasStatus_t (*)(Handle);
  explicit LtObject(Destroy destroy) : destroy_(destroy) {}
  ~LtObject() {
    if (handle_ != nullptr) destroy_(handle_);
  }
  LtObject(const LtObject&) = delete;
  LtObject& operator=(const LtObject&) = delete;

  Handle* out() { return &handle_; }
  Handle get() const { return handle_; }

 private:
  Destroy destroy_;
  Handle handle_ = nullptr;
};

// Everything one cublasLtMatmul call is described by.
class Description {
 public:
  Description(const KernelContext& ctx, const LtProblem& p, const LtOperands& x, const std::string& where)
      : lt_(cublaslt()), where_(where), desc_(lt_.matmul_desc_destroy), lt_a_(lt_.layout_destroy),
        lt_b_(lt_.layout_destroy), lt_d_(lt_.layout_destroy) {
    // cuBLASLt is column-major, where a row-major matrix is its transpose:
    // D = op(A) op(B) is computed as D^T = op(B)^T op(A)^T. Its A is our B,
    // its B our A, each with its own transpose flag, and D^T is [n, m].
    const cudaDataType_t in = data_type(ctx, p.input), out = data_type(ctx, p.output);
    check(lt_.matmul_desc_create(desc_.out(), CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    const int32_t op_a = p.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int32_t op_b = p.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    set_desc(CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a));
    set_desc(CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b));
    const uint32_t epilogue = lt_epilogue(p.epilogue);
    set_desc(CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue));
    if (has_bias(p.epilogue)) {
      // The heuristic reads the pointer's alignment from it, so it is set before.
      set_desc(CUBLASLT_MATMUL_DESC_BIAS_POINTER, &x.bias, sizeof(x.bias));
    }
    // Stored B is [k, n] row-major: n rows of a column-major [n, k] (or, transposed, [k, n] with k rows).
    layout(lt_a_, in, p.transpose_b ? p.k : p.n, p.transpose_b ? p.n : p.k, p.batch, p.stride_b, "B");
    layout(lt_b_, in, p.transpose_a ? p.m : p.k, p.transpose_a ? p.k : p.m, p.batch, p.stride_a, "A");
    layout(lt_d_, out, p.n, p.m, p.batch, p.stride_d, "D");
  }

  cublasLtMatmulDesc_t desc() const { return desc_.get(); }
  cublasLtMatrixLayout_t lt_a() const { return lt_a_.get(); }
  cublasLtMatrixLayout_t lt_b() const { return lt_b_.get(); }
  cublasLtMatrixLayout_t lt_d() const { return lt_d_.get(); }
  void check(cublasStatus_t status, const char* call) const { cublaslt_check(status, where_ + call); }

 private:
  void set_desc(cublasLtMatmulDescAttributes_t attribute, const void* value, size_t bytes) {
    check(lt_.matmul_desc_set_attribute(desc_.get(), attribute, value, bytes), "cublasLtMatmulDescSetAttribute");
  }

  // A column-major rows x cols matrix, leading dimension rows, `batch` of them `stride` elements apart.
  void layout(LtObject<cublasLtMatrixLayout_t>& object, cudaDataType_t type, int64_t rows, int64_t cols, int64_t batch,
              int64_t stride, const char* which) {
    check(lt_.layout_create(object.out(), type, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), rows),
          (std::string("cublasLtMatrixLayoutCreate (") + which + ")").c_str());
    if (batch == 1) return;
    if (batch > INT32_MAX) {
      throw Error(ErrorKind::kUnsupported, where_ + "a batch of " + std::to_string(batch) + " exceeds cuBLASLt's 32-bit count");
    }
    const auto count = static_cast<int32_t>(batch);
    check(lt_.layout_set_attribute(object.get(), CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
          "cublasLtMatrixLayoutSetAttribute (batch count)");
    check(lt_.layout_set_attribute(object.get(), CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)),
          "cublasLtMatrixLayoutSetAttribute (batch stride)");
  }

  const CublasLtApi& lt_;
  std::string where_;
  LtObject<cublasLtMatmulDesc_t> desc_;
  LtObject<cublasLtMatrixLayout_t> lt_a_, lt_b_, lt_d_;
};

}  // namespace

bool LtMatmul::try_run(const KernelContext& ctx, const LtProblem& p, const LtOperands& x) {
  const std::string where = ctx.node().op_type() + " '" + ctx.node().name() + "': ";
  if (p.m <= 0 || p.n <= 0 || p.k <= 0 || p.batch <= 0) {
    throw Error(ErrorKind::kInternal, where + "an empty product reached cuBLASLt");
  }
  if (has_bias(p.epilogue) && (x.bias == nullptr || p.output != p.input)) {
    throw Error(ErrorKind::kInternal, where + "a bias epilogue needs a bias of D's type");
  }
  cudaStream_t stream = cuda_stream(ctx);
  const int64_t in_bytes = static_cast<int64_t>(dtype_size(p.input));
  const int64_t out_bytes = static_cast<int64_t>(dtype_size(p.output));
  const uint32_t align_a = alignment_of(x.a, p.stride_a * in_bytes);
  const uint32_t align_b = alignment_of(x.b, p.stride_b * in_bytes);
  const uint32_t align_d = alignment_of(x.d, p.stride_d * out_bytes);
  const uint32_t align_bias = has_bias(p.epilogue) ? alignment_of(x.bias) : 0;
  const Key key{p.input, p.output, p.m, p.n, p.k, p.transpose_a, p.transpose_b, p.batch, p.stride_a, p.stride_b,
                p.stride_d, static_cast<int>(p.epilogue), align_a, align_b, align_d, align_bias};

  const CublasLtApi& lt = cublaslt();
  CublasLtHandle handle(ctx.stream()->device().index);  // this launch's own, from the pool
  Description description(ctx, p, x, where);
  // The choices are the only state runs share, so the mutex is held only to
  // look one up and to keep one: launches from several threads do not wait
  // for each other (two that miss at once both ask; the first answer stays).
  std::optional<Choice> known;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = choices_.find(key);
    if (found != choices_.end()) known = found->second;
  }
  if (!known) {
    LtObject<cublasLtMatmulPreference_t> preference(lt.preference_destroy);
    description.check(lt.preference_create(preference.out()), "cublasLtMatmulPreferenceCreate");
    auto prefer = [&](cublasLtMatmulPreferenceAttributes_t attribute, const void* value, size_t bytes) {
      description.check(lt.preference_set_attribute(preference.get(), attribute, value, bytes),
                        "cublasLtMatmulPreferenceSetAttribute");
    };
    prefer(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &kMaxWorkspaceBytes, sizeof(kMaxWorkspaceBytes));
    // cuBLASLt's A is our B (see Description); C is D.
    prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_b, sizeof(align_b));
    prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_a, sizeof(align_a));
    prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_d, sizeof(align_d));
    prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_d, sizeof(align_d));
    auto choose = [&]() {
      cublasLtMatmulHeuristicResult_t result{};
      int returned = 0;
      cublasStatus_t status = lt.algo_get_heuristic(handle.get(), description.desc(), description.lt_a(),
                                                    description.lt_b(), description.lt_d(), description.lt_d(),
                                                    preference.get(), 1, &result, &returned);
      if (status == CUBLAS_STATUS_NOT_SUPPORTED) return Choice{};
      description.check(status, "cublasLtMatmulAlgoGetHeuristic");
      if (returned == 0 || result.state != CUBLAS_STATUS_SUCCESS) return Choice{};
      return Choice{.found = true, .algo = result.algo, .workspace_bytes = result.workspaceSize};
    };
    Choice choice;
    if (p.output != DType::kFloat32) {
      // A split-K algorithm that reduces its partial sums in D's type (in
      // place, or through the workspace) would round them to f16/bf16 before
      // adding them up: only the f32 reduction keeps the f32 sum the CPU has.
      const uint32_t f32_reduction = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
      prefer(CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &f32_reduction, sizeof(f32_reduction));
      choice = choose();
      if (!choice.found) {
        // Should the mask also exclude algorithms without split-K, allow every scheme again.
        const uint32_t any_reduction = CUBLASLT_REDUCTION_SCHEME_MASK;
        prefer(CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &any_reduction, sizeof(any_reduction));
      }
    }
    if (!choice.found) choice = choose();
    std::lock_guard<std::mutex> lock(mutex_);
    known = choices_.emplace(key, choice).first->second;
  }
  const Choice& choice = *known;
  if (!choice.found) return false;

  const LaunchScratch workspace(ctx, {choice.workspace_bytes});
  const float alpha = p.alpha, beta = 0.0f;
  // C is D (beta is 0, so C is not read; cuBLASLt allows C and D to be one matrix).
  description.check(lt.matmul(handle.get(), description.desc(), &alpha, x.b, description.lt_a(), x.a,
                              description.lt_b(), &beta, x.d, description.lt_d(), x.d, description.lt_d(),
                              &choice.algo, workspace.part(0), choice.workspace_bytes, stream),
                    "cublasLtMatmul");
  return true;
}

void LtMatmul::run(const KernelContext& ctx, const LtProblem& p, const LtOperands& x) {
  if (try_run(ctx, p, x)) return;
  ctx.fail("cuBLASLt has no algorithm for a " + std::string(dtype_name(p.input)) + " product of [" +
           std::to_string(p.m) + "," + std::to_string(p.k) + "] x [" + std::to_string(p.k) + "," +
           std::to_string(p.n) + "] (batch " + std::to_string(p.batch) + ") into " + std::string(dtype_name(p.output)));
}

}  // namespace weir::cuda
