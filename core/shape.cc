#include "core/shape.h"

#include "core/error.h"

namespace weir {

Dim::Dim(int64_t size) : size_(size) {
  if (size < 0) {
    throw Error(ErrorKind::kShape,
                "dimension " + std::to_string(size) + " is negative (dimensions are >= 0)");
  }
}

Dim Dim::symbol(std::string name) {
  if (name.empty()) throw Error(ErrorKind::kInvalidArgument, "a symbolic dimension needs a name");
  Dim dim;
  dim.symbol_ = std::move(name);
  return dim;
}

int64_t Dim::size() const {
  if (is_symbolic()) {
    throw Error(ErrorKind::kShape, "dimension '" + symbol_ + "' is symbolic, not a known size");
  }
  return size_;
}

std::string Dim::to_string() const { return is_symbolic() ? symbol_ : std::to_string(size_); }

Shape Shape::from_sizes(const std::vector<int64_t>& sizes) {
  std::vector<Dim> dims;
  dims.reserve(sizes.size());
  for (int64_t size : sizes) dims.emplace_back(size);
  return Shape(std::move(dims));
}

Shape Shape::unknown_rank() {
  Shape shape;
  shape.has_rank_ = false;
  return shape;
}

int64_t Shape::rank() const {
  if (!has_rank_) throw Error(ErrorKind::kShape, "shape has unknown rank");
  return static_cast<int64_t>(dims_.size());
}

bool Shape::is_static() const {
  if (!has_rank_) return false;
  for (const Dim& dim : dims_) {
    if (dim.is_symbolic()) return false;
  }
  return true;
}

std::string format_sizes(const std::vector<int64_t>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) text += (i > 0 ? "," : "") + std::to_string(values[i]);
  return text + "]";
}

std::optional<int64_t> checked_num_elements(const std::vector<int64_t>& sizes) {
  int64_t count = 1;
  for (int64_t size : sizes) {
    if (size < 0 || __builtin_mul_overflow(count, size, &count)) return std::nullopt;
  }
  return count;
}

std::vector<int64_t> Shape::sizes() const {
  if (!is_static()) throw Error(ErrorKind::kShape, "shape " + to_string() + " is not static");
  std::vector<int64_t> sizes;
  sizes.reserve(dims_.size());
  for (const Dim& dim : dims_) sizes.push_back(dim.size());
  return sizes;
}

int64_t Shape::num_elements() const {
  auto count = checked_num_elements(sizes());
  if (!count) {
    throw Error(ErrorKind::kShape,
                "shape " + to_string() + " has more elements than fit in 64 bits");
  }
  return *count;
}

std::string Shape::to_string() const {
  if (!has_rank_) return "[?]";
  std::string text = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i > 0) text += ",";
    text += dims_[i].to_string();
  }
  return text + "]";
}

}  // namespace weir
