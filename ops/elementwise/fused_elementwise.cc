#include "ops/elementwise/fused_elementwise.h"

#include <cmath>
#include <sstream>

#include "core/error.h"
#include "ops/elementwise/scalar_ops.h"
#include "ops/shape_inference.h"
#include "ops/threading.h"

namespace weir {

namespace {

using Code = FusedStepOp;

struct OpInfo {
  const char* name;
  Code code;
  int arity;
};

constexpr OpInfo kOps[] = {
    {"Neg", Code::kNeg, 1},   {"Abs", Code::kAbs, 1},         {"Exp", Code::kExp, 1},   {"Log", Code::kLog, 1},
    {"Sqrt", Code::kSqrt, 1}, {"Reciprocal", Code::kReciprocal, 1}, {"Relu", Code::kRelu, 1},
    {"Sigmoid", Code::kSigmoid, 1}, {"Tanh", Code::kTanh, 1}, {"Erf", Code::kErf, 1}, {"Floor", Code::kFloor, 1},
    {"Ceil", Code::kCeil, 1}, {"Add", Code::kAdd, 2},         {"Sub", Code::kSub, 2},   {"Mul", Code::kMul, 2},
    {"Div", Code::kDiv, 2},   {"Max", Code::kMax, 2},         {"Min", Code::kMin, 2},
};

using Instruction = FusedStep;

}  // namespace

std::vector<FusedStep> parse_fused_program(const Node& node, size_t inputs) {
  auto fail = [&](const std::string& message) -> void {
    throw Error(ErrorKind::kInvalidArgument, "FusedElementwise '" + node.name() + "': " + message).with_node(node.name());
  };
  if (!node.has_attr("program")) fail("has no program");
  std::vector<Instruction> program;
  size_t registers = inputs;
  for (const std::string& line : node.attr("program").strings()) {
    std::istringstream in(line);
    std::string name;
    in >> name;
    const OpInfo* info = nullptr;
    for (const OpInfo& op : kOps) {
      if (name == op.name) info = &op;
    }
    if (info == nullptr) fail("unknown op '" + name + "' in \"" + line + "\"");
    Instruction instruction{info->code, 0, 0};
    int* args[2] = {&instruction.a, &instruction.b};
    for (int i = 0; i < info->arity; ++i) {
      long long r = -1;
      if (!(in >> r) || r < 0 || static_cast<size_t>(r) >= registers) {
        fail("\"" + line + "\" reads a register that does not exist yet (there are " + std::to_string(registers) + ")");
      }
      *args[i] = static_cast<int>(r);
    }
    std::string rest;
    if (in >> rest) fail("\"" + line + "\" has extra operands");
    program.push_back(instruction);
    ++registers;
  }
  if (program.empty()) fail("has an empty program");
  return program;
}

std::vector<int64_t> fused_elementwise_output_sizes(const KernelContext& ctx) {
  // The shape of the inputs that are not one element; input 0's when all are.
  // (A one-element input 0 does not set the shape: (scalar - x) is fine.)
  std::vector<int64_t> sizes = ctx.input(0).sizes();
  bool shaped = false;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& t = ctx.input(i);
    if (t.dtype() != ctx.input(0).dtype()) ctx.fail("input " + std::to_string(i) + " is " + t.type_string() + "; inputs share one dtype");
    if (t.num_elements() == 1) continue;
    if (shaped && t.sizes() != sizes) {
      ctx.fail("input " + std::to_string(i) + " is " + t.type_string() + "; every input has the output's shape " +
               format_sizes(sizes) + " or one element");
    }
    sizes = t.sizes();
    shaped = true;
  }
  return sizes;
}

namespace {

// Each step with the same scalar function as the op's own kernel, so a
// fused chain computes exactly what the ops did one by one.
template <typename T>
void apply(Code code, const T* a, const T* b, T* out, int64_t n) {
  using namespace elementwise;
  auto unary = [&]<typename Op>(Op) { for (int64_t i = 0; i < n; ++i) out[i] = Op::apply(a[i]); };
  auto binary = [&]<typename Op>(Op) { for (int64_t i = 0; i < n; ++i) out[i] = Op::apply(a[i], b[i]); };
  switch (code) {
    case Code::kNeg: unary(NegOp{}); break;
    case Code::kAbs: unary(AbsOp{}); break;
    case Code::kExp: unary(ExpOp{}); break;
    case Code::kLog: unary(LogOp{}); break;
    case Code::kSqrt: unary(SqrtOp{}); break;
    case Code::kReciprocal: for (int64_t i = 0; i < n; ++i) out[i] = T(1) / a[i]; break;
    case Code::kRelu: unary(ReluOp{}); break;
    case Code::kSigmoid: unary(SigmoidOp{}); break;
    case Code::kTanh: unary(TanhOp{}); break;
    case Code::kErf: for (int64_t i = 0; i < n; ++i) out[i] = std::erf(a[i]); break;
    case Code::kFloor: for (int64_t i = 0; i < n; ++i) out[i] = std::floor(a[i]); break;
    case Code::kCeil: for (int64_t i = 0; i < n; ++i) out[i] = std::ceil(a[i]); break;
    case Code::kAdd: binary(AddOp{}); break;
    case Code::kSub: binary(SubOp{}); break;
    case Code::kMul: binary(MulOp{}); break;
    case Code::kDiv: binary(DivOp{}); break;
    case Code::kMax: binary(MaxOp{}); break;
    case Code::kMin: binary(MinOp{}); break;
  }
}

class FusedElementwiseKernel final : public OpKernel {
 public:
  explicit FusedElementwiseKernel(const Node& node) : program_(parse_fused_program(node, node.num_inputs())) {}

  void compute(KernelContext& ctx) override {
    const std::vector<int64_t> sizes = fused_elementwise_output_sizes(ctx);
    const DType dtype = ctx.input(0).dtype();
    Tensor& y = ctx.allocate_output(0, dtype, sizes, KernelContext::Fill::kUninitialized);
    if (dtype == DType::kFloat32) {
      run<float>(ctx, y);
    } else if (dtype == DType::kFloat64) {
      run<double>(ctx, y);
    } else {
      ctx.fail("needs f32 or f64, not " + std::string(dtype_name(dtype)));
    }
  }

 private:
  template <typename T>
  void run(const KernelContext& ctx, Tensor& y) const {
    constexpr int64_t kBlock = 256;
    const int64_t total = y.num_elements();
    const size_t inputs = ctx.num_inputs();
    const size_t registers = inputs + program_.size();
    std::vector<const T*> sources(inputs);
    std::vector<bool> scalar(inputs);
    for (size_t i = 0; i < inputs; ++i) {
      sources[i] = ctx.input(i).data<T>();
      scalar[i] = ctx.input(i).num_elements() == 1 && total != 1;
    }
    T* out = y.data<T>();
    parallel_for((total + kBlock - 1) / kBlock, std::max<int64_t>(1, kElementwiseGrain / kBlock), [&](int64_t begin, int64_t end) {
      std::vector<T> storage(registers * kBlock);
      std::vector<const T*> reg(registers);
      for (int64_t block = begin; block < end; ++block) {
        const int64_t start = block * kBlock, n = std::min(kBlock, total - start);
        for (size_t i = 0; i < inputs; ++i) {
          if (scalar[i]) {
            std::fill_n(storage.data() + i * kBlock, n, sources[i][0]);
            reg[i] = storage.data() + i * kBlock;
          } else {
            reg[i] = sources[i] + start;  // read in place
          }
        }
        for (size_t k = 0; k < program_.size(); ++k) {
          const Instruction& step = program_[k];
          // The last step writes the output directly (in place over input 0 is fine: elementwise).
          T* dst = k + 1 == program_.size() ? out + start : storage.data() + (inputs + k) * kBlock;
          apply<T>(step.op, reg[static_cast<size_t>(step.a)], reg[static_cast<size_t>(step.b)], dst, n);
          reg[inputs + k] = dst;
        }
      }
    });
  }

  std::vector<Instruction> program_;
};

}  // namespace

const std::vector<std::string>& fusable_elementwise_ops() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> list;
    for (const OpInfo& op : kOps) list.emplace_back(op.name);
    return list;
  }();
  return names;
}

int fusable_elementwise_arity(const std::string& name) {
  for (const OpInfo& op : kOps) {
    if (name == op.name) return op.arity;
  }
  return 0;
}

void register_fused_elementwise_schema(OpRegistry& registry) {
  OpSchema fused("FusedElementwise");
  fused.input("inputs", "T", Arity::kVariadic)
      .output("Y", "T")
      .type_constraint("T", {DType::kFloat32, DType::kFloat64})
      .required_attr("program", AttrType::kStrings)
      .traits(OpTrait::kElementwise | OpTrait::kInplaceable)
      .infer([](InferenceContext& ctx) {
        parse_fused_program(ctx.node(), ctx.num_inputs());
        // The output has the shape of the inputs that are not one element
        // (all of them agree), else input 0's.
        const TensorType* shaped = ctx.input_type(0);
        for (size_t i = 0; i < ctx.num_inputs(); ++i) {
          const TensorType* t = ctx.input_type(i);
          bool one = t != nullptr && t->shape.has_rank() && t->shape.is_static() && t->shape.num_elements() == 1;
          if (t != nullptr && !one) {
            shaped = t;
            break;
          }
        }
        if (shaped != nullptr) ctx.set_output_type(0, *shaped);
      })
      .doc("a chain of elementwise ops in one pass: inputs of the output's shape or one element; attribute "
           "program, one 'Op a [b]' per step over registers (inputs first, then each step's result)");
  registry.add(std::move(fused));
}

void register_fused_elementwise_cpu_kernel(KernelRegistry& registry) {
  registry.add("FusedElementwise", DeviceType::kCpu, {DType::kFloat32, DType::kFloat64},
               [](const Node& node) { return std::make_unique<FusedElementwiseKernel>(node); });
}

}  // namespace weir
