// C++ on top of weir/plugin.h: a custom op as a plain C++ function with
// typed tensor arguments. Header-only; a plugin needs nothing else of Weir.
//
//   #include "weir/plugin.hpp"
//
//   // Y = A * sigmoid(beta * A) * B, elementwise
//   void silu_gate(const weir::plugin::Attributes& attrs, weir::plugin::Input<float> a,
//                  weir::plugin::Input<float> b, weir::plugin::Output<float> y) {
//     double beta = attrs.get_float("beta");
//     for (int64_t i = 0; i < y.size(); ++i) y[i] = a[i] / (1 + std::exp(-beta * a[i])) * b[i];
//   }
//
//   WEIR_PLUGIN_BEGIN("silu_gate")
//     weir::plugin::op<silu_gate>("SiluGate", {"A", "B"}, {"Y"}, {weir::plugin::float_attr("beta", 1.0)}),
//   WEIR_PLUGIN_END()
//
// The function's parameters decide the op: an optional leading
// `const Attributes&`, then Input<T> per input and Output<T> per output.
// Outputs take input 0's shape; inputs must have T's dtype (checked). A C++
// exception thrown by the function becomes the op's error message; nothing
// throws across the C boundary. Such an op is declared pure (a function of
// its inputs and attributes), so passes may fold and merge it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <exception>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "weir/plugin.h"

namespace weir::plugin {

template <typename T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr int32_t value = WEIR_DTYPE_FLOAT32; };
template <> struct DTypeOf<double> { static constexpr int32_t value = WEIR_DTYPE_FLOAT64; };
template <> struct DTypeOf<int64_t> { static constexpr int32_t value = WEIR_DTYPE_INT64; };
template <> struct DTypeOf<int32_t> { static constexpr int32_t value = WEIR_DTYPE_INT32; };
template <> struct DTypeOf<uint8_t> { static constexpr int32_t value = WEIR_DTYPE_UINT8; };

class Attributes {
 public:
  explicit Attributes(const WeirAttributes* attributes) : a_(attributes) {}
  int64_t get_int(const char* name) const {
    int64_t v = 0;
    if (a_ == nullptr || a_->get_int(a_->opaque, name, &v) != WEIR_STATUS_OK) missing(name, "int");
    return v;
  }
  double get_float(const char* name) const {
    double v = 0;
    if (a_ == nullptr || a_->get_float(a_->opaque, name, &v) != WEIR_STATUS_OK) missing(name, "float");
    return v;
  }
  std::string get_string(const char* name) const {
    const char* v = nullptr;
    if (a_ == nullptr || a_->get_string(a_->opaque, name, &v) != WEIR_STATUS_OK) missing(name, "string");
    return v;
  }

 private:
  [[noreturn]] static void missing(const char* name, const char* type) {
    throw std::runtime_error(std::string("no ") + type + " attribute '" + name + "'");
  }
  const WeirAttributes* a_;
};

// Shape access shared by Input and Output.
class TensorShape {
 public:
  explicit TensorShape(const WeirTensor& t) : t_(t) {}
  int32_t rank() const { return t_.rank; }
  int64_t dim(int32_t axis) const { return t_.sizes[axis]; }
  int64_t size() const {
    int64_t n = 1;
    for (int32_t i = 0; i < t_.rank; ++i) n *= t_.sizes[i];
    return n;
  }
  const WeirTensor& raw() const { return t_; }

 protected:
  WeirTensor t_;
};

template <typename T>
class Input : public TensorShape {
 public:
  explicit Input(const WeirTensor& t) : TensorShape(t) {}
  const T* data() const { return static_cast<const T*>(t_.data); }
  const T& operator[](int64_t i) const { return data()[i]; }
};

template <typename T>
class Output : public TensorShape {
 public:
  explicit Output(const WeirTensor& t) : TensorShape(t) {}
  T* data() const { return static_cast<T*>(t_.data); }
  T& operator[](int64_t i) const { return data()[i]; }
};

inline WeirAttrSpec float_attr(const char* name, double fallback) { return {name, WEIR_ATTR_FLOAT, 0, 0, fallback, nullptr}; }
inline WeirAttrSpec int_attr(const char* name, int64_t fallback) { return {name, WEIR_ATTR_INT, 0, fallback, 0, nullptr}; }
inline WeirAttrSpec string_attr(const char* name, const char* fallback) { return {name, WEIR_ATTR_STRING, 0, 0, 0, fallback}; }

namespace detail {

template <typename A> struct Arg { static constexpr int kind = -1; };
template <typename T> struct Arg<Input<T>> { static constexpr int kind = 0; using type = T; };
template <typename T> struct Arg<Output<T>> { static constexpr int kind = 1; using type = T; };
template <> struct Arg<const Attributes&> { static constexpr int kind = 2; };

inline void write_error(char* error, size_t size, const char* message) {
  if (error != nullptr && size > 0) std::snprintf(error, size, "%s", message);
}

template <auto Fn> struct FunctionOp;

template <typename... Args, void (*Fn)(Args...)>
struct FunctionOp<Fn> {
  static_assert(((Arg<Args>::kind >= 0) && ...), "op function parameters must be Input<T>, Output<T> or const Attributes&");
  static constexpr int num_inputs = ((Arg<Args>::kind == 0 ? 1 : 0) + ... + 0);
  static constexpr int num_outputs = ((Arg<Args>::kind == 1 ? 1 : 0) + ... + 0);

  struct State {
    WeirAttributes attributes;  // copied at create: valid for the kernel's life
    bool has_attributes;
  };

  static int32_t create(const WeirAttributes* attributes, void** state, char*, size_t) {
    *state = new State{attributes != nullptr ? *attributes : WeirAttributes{}, attributes != nullptr};
    return WEIR_STATUS_OK;
  }
  static void destroy(void* state) { delete static_cast<State*>(state); }

  template <typename A>
  static A make_arg(WeirKernelContext* ctx, const Attributes& attrs, int& input, int& output) {
    if constexpr (Arg<A>::kind == 2) {
      return attrs;
    } else if constexpr (Arg<A>::kind == 0) {
      const WeirTensor& t = ctx->inputs[input];
      if (t.data == nullptr && t.rank != 0) throw std::runtime_error("input " + std::to_string(input) + " is absent");
      if (t.dtype != DTypeOf<typename Arg<A>::type>::value) {
        throw std::runtime_error("input " + std::to_string(input) + " has dtype code " + std::to_string(t.dtype) +
                                 ", expected " + std::to_string(DTypeOf<typename Arg<A>::type>::value));
      }
      ++input;
      return A(t);
    } else {
      const WeirTensor& first = ctx->inputs[0];
      const WeirTensor* t = ctx->allocate_output(ctx->opaque, output, DTypeOf<typename Arg<A>::type>::value, first.rank,
                                                 first.sizes);
      if (t == nullptr) throw std::runtime_error("could not allocate output " + std::to_string(output));
      ++output;
      return A(*t);
    }
  }

  static int32_t compute(void* state, WeirKernelContext* ctx, char* error, size_t error_size) {
    try {
      if (ctx->num_inputs < num_inputs || ctx->num_inputs < 1) throw std::runtime_error("too few inputs");
      auto* s = static_cast<State*>(state);
      Attributes attrs(s != nullptr && s->has_attributes ? &s->attributes : nullptr);
      int input = 0, output = 0;
      // Braced initialization evaluates the arguments left to right.
      std::tuple<Args...> args{make_arg<Args>(ctx, attrs, input, output)...};
      std::apply(Fn, args);
      return WEIR_STATUS_OK;
    } catch (const std::exception& e) {
      write_error(error, error_size, e.what());
    } catch (...) {
      write_error(error, error_size, "unknown C++ exception");
    }
    return WEIR_STATUS_ERROR;
  }
};

}  // namespace detail

// The op description for `Fn`; the name lists must live as long as the
// plugin (string literals do). Outputs take input 0's dtype-of-T and shape.
template <auto Fn>
WeirOpDef op(const char* name, std::initializer_list<const char*> inputs, std::initializer_list<const char*> outputs,
             std::initializer_list<WeirAttrSpec> attributes = {}) {
  using F = detail::FunctionOp<Fn>;
  // Static storage per instantiation: WeirOpDef points at these arrays.
  static std::vector<const char*> input_names;
  static std::vector<const char*> output_names;
  static std::vector<WeirAttrSpec> attribute_specs;
  static std::vector<int32_t> dtypes;
  input_names.assign(inputs.begin(), inputs.end());
  output_names.assign(outputs.begin(), outputs.end());
  attribute_specs.assign(attributes.begin(), attributes.end());
  WeirOpDef def{};
  def.struct_size = sizeof(WeirOpDef);
  def.name = name;
  def.domain = "";
  def.num_inputs = static_cast<int32_t>(input_names.size());
  def.input_names = input_names.data();
  def.num_outputs = static_cast<int32_t>(output_names.size());
  def.output_names = output_names.data();
  def.num_attributes = static_cast<int32_t>(attribute_specs.size());
  def.attributes = attribute_specs.data();
  def.num_dtypes = 0;  // f32
  def.dtypes = nullptr;
  def.infer = nullptr;  // outputs like input 0
  def.create = &F::create;
  def.compute = &F::compute;
  def.destroy = &F::destroy;
  def.doc = nullptr;
  def.flags = WEIR_OP_FLAG_PURE;  // a function of its inputs and attributes
  if (F::num_inputs != def.num_inputs || F::num_outputs != def.num_outputs) {
    def.compute = nullptr;  // refused by the loader: the names do not match the function
  }
  return def;
}

}  // namespace weir::plugin

// The plugin's entry point over a list of op<...>(...) descriptions.
#define WEIR_PLUGIN_BEGIN(plugin_name)                                               \
  extern "C" WEIR_PLUGIN_EXPORT const WeirPluginInfo* weir_plugin_entry(void) {      \
    static const char* const weir_plugin_name = plugin_name;                        \
    static const std::vector<WeirOpDef> weir_plugin_ops = {
#define WEIR_PLUGIN_END()                                                           \
    };                                                                               \
    static const WeirPluginInfo info = {WEIR_PLUGIN_ABI_VERSION, sizeof(WeirPluginInfo), weir_plugin_name, \
                                        static_cast<int32_t>(weir_plugin_ops.size()), weir_plugin_ops.data()}; \
    return &info;                                                                    \
  }
