// weir.GraphBuilder, weir.Var and weir.nn: build graphs from Python with
// the C++ builder and nn layers (frontend/builder, frontend/nn).
//
//   b = weir.GraphBuilder("mlp", seed=1)
//   x = b.input("x", "f32", ["N", 784])
//   fc = weir.nn.Linear(b, "fc", 784, 10)
//   b.output(weir.nn.relu(fc(x)), name="logits")
//   graph = b.finish()        # raises weir.Error with the first failed call
//
// A Var keeps its builder alive; a layer keeps its builder alive.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>

#include "core/error.h"
#include "frontend/builder/graph_builder.h"
#include "frontend/nn/functional.h"
#include "frontend/nn/layers.h"
#include "models/named_output.h"
#include "python/src/bindings.h"
#include "python/src/graphs.h"
#include "python/src/ndarray.h"

namespace py = pybind11;

namespace weir::python {

namespace {

Shape shape_from_python(const py::sequence& dims) {
  std::vector<Dim> out;
  for (const py::handle& d : dims) {
    if (py::isinstance<py::str>(d)) {
      out.push_back(Dim::symbol(d.cast<std::string>()));
    } else if (py::isinstance<py::int_>(d)) {
      out.emplace_back(d.cast<int64_t>());
    } else {
      throw Error(ErrorKind::kInvalidArgument, "a shape's dims are ints or symbol names (str), got " +
                                                   std::string(py::str(py::type::of(d).attr("__name__"))));
    }
  }
  return Shape(out);
}

py::list shape_to_python(const Shape& shape) {
  py::list out;
  if (!shape.has_rank()) return out;
  for (const Dim& d : shape.dims()) {
    if (d.is_static()) {
      out.append(d.size());
    } else {
      out.append(d.symbol_name());
    }
  }
  return out;
}

Attribute attribute_from_python(const std::string& name, const py::handle& value) {
  if (py::isinstance<py::bool_>(value)) return Attribute(static_cast<int64_t>(value.cast<bool>()));
  if (py::isinstance<py::int_>(value)) return Attribute(value.cast<int64_t>());
  if (py::isinstance<py::float_>(value)) return Attribute(value.cast<double>());
  if (py::isinstance<py::str>(value)) return Attribute(value.cast<std::string>());
  if (py::isinstance<py::array>(value)) return Attribute(to_owned_tensor(value, "attribute '" + name + "'"));
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    py::sequence items = py::reinterpret_borrow<py::sequence>(value);
    bool ints = true, numbers = true, strings = true;
    for (const py::handle& item : items) {
      const bool is_int = py::isinstance<py::int_>(item) && !py::isinstance<py::bool_>(item);
      ints = ints && is_int;
      numbers = numbers && (is_int || py::isinstance<py::float_>(item));
      strings = strings && py::isinstance<py::str>(item);
    }
    if (ints) return Attribute(items.cast<std::vector<int64_t>>());
    if (numbers) return Attribute(items.cast<std::vector<double>>());
    if (strings) return Attribute(items.cast<std::vector<std::string>>());
  }
  throw Error(ErrorKind::kInvalidArgument, "attribute '" + name +
                                               "': expected an int, float, str, array or a list of ints, floats or "
                                               "strs, got " + std::string(py::str(py::type::of(value).attr("__name__"))));
}

Var checked(const Var& v, const char* what) {
  if (v.builder() == nullptr) throw Error(ErrorKind::kInvalidArgument, std::string(what) + ": an empty Var");
  return v;
}

// `with b.scope("block1"):` names what is built inside "block1/...".
struct ScopeContext {
  std::shared_ptr<GraphBuilder> builder;
  std::string name;
  std::unique_ptr<GraphBuilder::Scope> scope;
};

}  // namespace

void bind_builder(py::module_& m) {
  py::class_<Var>(m, "Var", "A value being built; its type is known as soon as the call that made it returns")
      .def_property_readonly("name", [](const Var& v) { return v.valid() ? v.name() : std::string(); })
      .def_property_readonly("valid", &Var::valid, "False after a failed builder call")
      .def_property_readonly("dtype", [](const Var& v) { return std::string(dtype_name(v.dtype())); })
      .def_property_readonly("shape", [](const Var& v) { return shape_to_python(v.shape()); })
      .def("__add__", [](const Var& a, const Var& b) { return checked(a, "+") + b; }, py::keep_alive<0, 1>())
      .def("__sub__", [](const Var& a, const Var& b) { return checked(a, "-") - b; }, py::keep_alive<0, 1>())
      .def("__mul__", [](const Var& a, const Var& b) { return checked(a, "*") * b; }, py::keep_alive<0, 1>())
      .def("__truediv__", [](const Var& a, const Var& b) { return checked(a, "/") / b; }, py::keep_alive<0, 1>())
      .def("__add__", [](const Var& a, double b) { return checked(a, "+") + b; }, py::keep_alive<0, 1>())
      .def("__mul__", [](const Var& a, double b) { return checked(a, "*") * b; }, py::keep_alive<0, 1>())
      .def("__repr__", [](const Var& v) {
        return v.valid() ? "<weir.Var '" + v.name() + "': " + v.type().to_string() + ">" : std::string("<weir.Var invalid>");
      });

  py::class_<ScopeContext>(m, "Scope")
      .def("__enter__", [](ScopeContext& s) { s.scope = std::make_unique<GraphBuilder::Scope>(*s.builder, s.name); })
      .def("__exit__", [](ScopeContext& s, const py::args&) { s.scope.reset(); });

  py::class_<GraphBuilder, std::shared_ptr<GraphBuilder>>(m, "GraphBuilder", R"doc(
Builds a graph with typed values. Each call infers its outputs' types at
once; the first error is kept and reported by finish(), which raises
weir.Error naming the failed call.)doc")
      .def(py::init<std::string, uint64_t>(), py::arg("name") = "model", py::arg("seed") = 0)
      .def("input", [](GraphBuilder& b, const std::string& name, const py::handle& dtype, const py::sequence& shape) {
        return b.input(name, TensorType{parse_python_dtype(dtype), shape_from_python(shape)});
      }, py::arg("name"), py::arg("dtype"), py::arg("shape"), py::keep_alive<0, 1>(),
         "A graph input; shape dims are ints or symbol names ('N')")
      .def("parameter", [](GraphBuilder& b, const std::string& name, const py::handle& initial) {
        return b.parameter(name, to_owned_tensor(initial, "parameter '" + name + "'"));
      }, py::arg("name"), py::arg("initial"), py::keep_alive<0, 1>(), "A trainable persistent value")
      .def("constant", [](GraphBuilder& b, const py::handle& value, const std::string& name) {
        return b.constant(to_owned_tensor(value, "constant"), name);
      }, py::arg("value"), py::arg("name") = "", py::keep_alive<0, 1>())
      .def("scalar", [](GraphBuilder& b, double value, const py::handle& dtype) {
        return b.scalar(value, dtype.is_none() ? DType::kFloat32 : parse_python_dtype(dtype));
      }, py::arg("value"), py::arg("dtype") = py::none(), py::keep_alive<0, 1>())
      .def("op", [](GraphBuilder& b, const std::string& op_type, const std::vector<Var>& inputs,
                    const py::dict& attributes, const std::string& name, int num_outputs) -> py::object {
        std::map<std::string, Attribute> attrs;
        for (const auto& [key, value] : attributes) {
          const std::string attr_name = py::str(key);
          attrs.emplace(attr_name, attribute_from_python(attr_name, value));
        }
        std::vector<Var> outputs = b.op(op_type, inputs, static_cast<size_t>(std::max(num_outputs, 1)), attrs, name);
        if (num_outputs == 1) return py::cast(outputs.at(0));
        return py::cast(outputs);
      }, py::arg("op_type"), py::arg("inputs"), py::arg("attributes") = py::dict(), py::arg("name") = "",
         py::arg("num_outputs") = 1, py::keep_alive<0, 1>(),
         "Adds a node of any registered op; returns its output (a list when num_outputs > 1)")
      .def("output", [](GraphBuilder& b, const Var& value, const std::string& name) {
        if (name.empty()) {
          b.output(value);
        } else {
          models::add_named_output(b, value, name);
        }
      }, py::arg("value"), py::arg("name") = "", "Makes a value a graph output, under `name` when given")
      .def("scope", [](const std::shared_ptr<GraphBuilder>& b, const std::string& name) {
        return ScopeContext{b, name, nullptr};
      }, py::arg("name"))
      .def_property_readonly("ok", &GraphBuilder::ok)
      .def("finish", [](GraphBuilder& b) { return GraphHandle(b.finish()); },
           "Verifies the graph and returns it; raises weir.Error with the first failed call");

  py::module_ nn = m.def_submodule("nn", "Layers and functions for GraphBuilder graphs (frontend/nn)");
  py::class_<nn::Linear>(nn, "Linear")
      .def(py::init<GraphBuilder&, const std::string&, int64_t, int64_t, bool>(), py::arg("builder"), py::arg("name"),
           py::arg("in_features"), py::arg("out_features"), py::arg("bias") = true, py::keep_alive<1, 2>())
      .def("__call__", &nn::Linear::operator(), py::keep_alive<0, 1>())
      .def_readonly("weight", &nn::Linear::weight)
      .def_readonly("bias", &nn::Linear::bias);
  py::class_<nn::Conv2d>(nn, "Conv2d")
      .def(py::init([](GraphBuilder& b, const std::string& name, int64_t in_channels, int64_t out_channels,
                       int64_t kernel, int64_t stride, int64_t padding, bool bias, int64_t groups) {
             return nn::Conv2d(b, name, {.in_channels = in_channels, .out_channels = out_channels, .kernel = kernel,
                                         .stride = stride, .padding = padding, .bias = bias, .groups = groups});
           }),
           py::arg("builder"), py::arg("name"), py::arg("in_channels"), py::arg("out_channels"), py::arg("kernel"),
           py::arg("stride") = 1, py::arg("padding") = 0, py::arg("bias") = true, py::arg("groups") = 1,
           py::keep_alive<1, 2>())
      .def("__call__", &nn::Conv2d::operator(), py::keep_alive<0, 1>())
      .def_readonly("weight", &nn::Conv2d::weight)
      .def_readonly("bias", &nn::Conv2d::bias);
  py::class_<nn::BatchNorm2d>(nn, "BatchNorm2d")
      .def(py::init<GraphBuilder&, const std::string&, int64_t, bool, double, double>(), py::arg("builder"),
           py::arg("name"), py::arg("channels"), py::arg("training"), py::arg("momentum") = 0.9,
           py::arg("epsilon") = 1e-5, py::keep_alive<1, 2>())
      .def("__call__", &nn::BatchNorm2d::operator(), py::keep_alive<0, 1>());
  py::class_<nn::LayerNorm>(nn, "LayerNorm")
      .def(py::init<GraphBuilder&, const std::string&, int64_t, double>(), py::arg("builder"), py::arg("name"),
           py::arg("features"), py::arg("epsilon") = 1e-5, py::keep_alive<1, 2>())
      .def("__call__", &nn::LayerNorm::operator(), py::keep_alive<0, 1>());
  py::class_<nn::Embedding>(nn, "Embedding")
      .def(py::init<GraphBuilder&, const std::string&, int64_t, int64_t>(), py::arg("builder"), py::arg("name"),
           py::arg("num"), py::arg("dim"), py::keep_alive<1, 2>())
      .def("__call__", &nn::Embedding::operator(), py::keep_alive<0, 1>());

  nn.def("matmul", &nn::matmul, py::keep_alive<0, 1>());
  nn.def("relu", &nn::relu, py::keep_alive<0, 1>());
  nn.def("gelu", &nn::gelu, py::keep_alive<0, 1>());
  nn.def("tanh", &nn::tanh, py::keep_alive<0, 1>());
  nn.def("sigmoid", &nn::sigmoid, py::keep_alive<0, 1>());
  nn.def("relu6", &nn::relu6, py::keep_alive<0, 1>());
  nn.def("softmax", &nn::softmax, py::arg("x"), py::arg("axis") = -1, py::keep_alive<0, 1>());
  nn.def("log_softmax", &nn::log_softmax, py::arg("x"), py::arg("axis") = -1, py::keep_alive<0, 1>());
  nn.def("reshape", &nn::reshape, py::arg("x"), py::arg("shape"), py::keep_alive<0, 1>());
  nn.def("flatten", &nn::flatten, py::arg("x"), py::arg("axis") = 1, py::keep_alive<0, 1>());
  nn.def("transpose", &nn::transpose, py::arg("x"), py::arg("perm"), py::keep_alive<0, 1>());
  nn.def("concat", &nn::concat, py::arg("xs"), py::arg("axis"), py::keep_alive<0, 1>());
  nn.def("max_pool2d", &nn::max_pool2d, py::arg("x"), py::arg("kernel"), py::arg("stride"), py::arg("padding") = 0,
         py::arg("ceil_mode") = false, py::keep_alive<0, 1>());
  nn.def("avg_pool2d", &nn::avg_pool2d, py::arg("x"), py::arg("kernel"), py::arg("stride"), py::arg("padding") = 0, py::keep_alive<0, 1>());
  nn.def("global_avg_pool", &nn::global_avg_pool, py::keep_alive<0, 1>());
  nn.def("reduce_mean", &nn::reduce_mean, py::arg("x"), py::arg("axes"), py::arg("keepdims") = false, py::keep_alive<0, 1>());
  nn.def("reduce_sum", &nn::reduce_sum, py::arg("x"), py::arg("axes"), py::arg("keepdims") = false, py::keep_alive<0, 1>());
  nn.def("cross_entropy", &nn::cross_entropy, py::arg("logits"), py::arg("labels"),
         "Mean softmax cross-entropy of logits [N, C] against int64 labels [N]", py::keep_alive<0, 1>());
  nn.def("sigmoid_cross_entropy", &nn::sigmoid_cross_entropy, py::arg("logits"), py::arg("labels"), py::keep_alive<0, 1>());
  nn.def("mse", &nn::mse, py::arg("prediction"), py::arg("target"), py::keep_alive<0, 1>());
  nn.def("dropout", &nn::dropout, py::arg("x"), py::arg("ratio"), py::arg("training"), py::keep_alive<0, 1>());
}

}  // namespace weir::python
