// Shape — a tensor's dimensions, each a known size or a named symbol.
//
//   weir::Shape s{weir::Dim::symbol("batch"), 3, 224, 224};
//   s.rank();                 // 4
//   s.is_static();            // false: "batch" is symbolic
//   s.to_string();            // "[batch,3,224,224]"
//   weir::Shape t{2, 3};
//   t.num_elements();         // 6; throws weir::Error on symbolic dims or overflow
//   weir::Shape unknown = weir::Shape::unknown_rank();
//
// A dimension is never negative. Element counts are checked for int64 overflow.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace weir {

class Dim {
 public:
  Dim() = default;
  Dim(int64_t size);  // NOLINT(google-explicit-constructor): Shape{2, 3} reads naturally
  static Dim symbol(std::string name);

  bool is_static() const { return symbol_.empty(); }
  bool is_symbolic() const { return !symbol_.empty(); }
  int64_t size() const;  // throws when symbolic
  const std::string& symbol_name() const { return symbol_; }
  std::string to_string() const;

  bool operator==(const Dim& other) const = default;

 private:
  int64_t size_ = 0;
  std::string symbol_;
};

class Shape {
 public:
  Shape() = default;  // rank 0: a scalar
  Shape(std::initializer_list<Dim> dims) : dims_(dims) {}
  explicit Shape(std::vector<Dim> dims) : dims_(std::move(dims)) {}
  static Shape from_sizes(const std::vector<int64_t>& sizes);
  static Shape unknown_rank();

  bool has_rank() const { return has_rank_; }
  int64_t rank() const;  // throws for unknown rank
  const std::vector<Dim>& dims() const { return dims_; }
  const Dim& operator[](size_t axis) const { return dims_.at(axis); }
  Dim& operator[](size_t axis) { return dims_.at(axis); }

  bool is_static() const;
  // Product of the static sizes; throws when symbolic, of unknown rank, or
  // when the product overflows int64.
  int64_t num_elements() const;
  std::vector<int64_t> sizes() const;  // throws unless static
  std::string to_string() const;

  bool operator==(const Shape& other) const = default;

 private:
  std::vector<Dim> dims_;
  bool has_rank_ = true;
};

// "[2,3,-1]": any list of sizes or axes, negative entries included.
std::string format_sizes(const std::vector<int64_t>& values);

// Multiplies sizes with an overflow check; nullopt on overflow or a negative size.
std::optional<int64_t> checked_num_elements(const std::vector<int64_t>& sizes);

}  // namespace weir
