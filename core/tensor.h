// Tensor — a dense, row-major block of elements of one dtype.
//
// A Tensor is a cheap handle: copies share the same storage. Storage is either
// owned (allocated from an Allocator, 64-byte aligned, freed with the last
// handle) or external (memory someone else owns, e.g. an mmap'ed file, kept
// alive by a shared_ptr the caller passes in). A view shares storage at a
// byte offset with its own dtype and sizes.
//
//   weir::Tensor t(weir::DType::kFloat32, {2, 3});          // zero-filled, cpu:0
//   float* p = t.data<float>();
//   weir::Tensor row = t.slice(1, 2);                       // view of row 1
//   weir::Tensor flat = t.reshape({6});                     // view, same bytes
//   auto v = weir::Tensor::from_vector<int64_t>({1, 2, 3}, {3});
//   t.clone();                                              // deep copy
//
// What it does not do: strides other than row-major, or arithmetic; kernels
// in ops/ do that.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/allocator.h"
#include "core/device.h"
#include "core/dtype.h"
#include "core/half.h"
#include "core/shape.h"
#include "core/tensor_type.h"

namespace weir {

// Maps a C++ element type to its DType.
template <typename T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::kFloat32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::kFloat64; };
template <> struct DTypeOf<Float16> { static constexpr DType value = DType::kFloat16; };
template <> struct DTypeOf<BFloat16> { static constexpr DType value = DType::kBFloat16; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::kInt8; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::kUInt8; };
template <> struct DTypeOf<int16_t> { static constexpr DType value = DType::kInt16; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::kInt32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::kInt64; };
template <> struct DTypeOf<uint16_t> { static constexpr DType value = DType::kUInt16; };
template <> struct DTypeOf<uint32_t> { static constexpr DType value = DType::kUInt32; };
template <> struct DTypeOf<uint64_t> { static constexpr DType value = DType::kUInt64; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::kBool; };

// A block of bytes on one device. Owned storage returns its memory to the
// allocator on destruction; external storage releases its keep-alive handle.
class Storage {
 public:
  Storage(Allocator& allocator, size_t bytes);
  Storage(void* data, size_t bytes, Device device, std::shared_ptr<void> keep_alive);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }
  bool is_owned() const { return allocator_ != nullptr; }
  // What owned storage returns its memory to; nullptr for external storage.
  Allocator* allocator() const { return allocator_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  Device device_;
  Allocator* allocator_ = nullptr;
  std::shared_ptr<void> keep_alive_;
};

class Tensor {
 public:
  Tensor() = default;  // undefined: no dtype, no storage
  // Owned, zero-filled when the allocator's device is a CPU.
  Tensor(DType dtype, std::vector<int64_t> sizes, Allocator& allocator = cpu_allocator());
  // Owned, contents unspecified: for outputs a kernel overwrites entirely,
  // where zero-filling first would only add memory traffic.
  static Tensor uninitialized(DType dtype, std::vector<int64_t> sizes, Allocator& allocator = cpu_allocator());
  // External memory of exactly dtype_size * num_elements bytes; `keep_alive`
  // is held as long as any view of this tensor lives.
  static Tensor wrap(DType dtype, std::vector<int64_t> sizes, void* data, Device device,
                     std::shared_ptr<void> keep_alive);
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, std::vector<int64_t> sizes);
  template <typename T>
  static Tensor scalar(T value) { return from_vector<T>({value}, {}); }

  // ONNX's sequence and optional values travel in a Tensor handle, so that
  // kernels, evaluators and executors pass them like any value. A sequence
  // holds tensors of one dtype (its dtype()); it has no bytes of its own
  // (sizes() is {0}, num_elements() 0). Its elements own their memory.
  static Tensor sequence(DType dtype, std::vector<Tensor> elements);
  bool is_sequence() const { return elements_ != nullptr; }
  const std::vector<Tensor>& elements() const;  // throws unless is_sequence()
  // An optional without a value, of a tensor or (`sequence`) a sequence.
  static Tensor none(DType dtype, bool sequence);
  bool is_none() const { return none_ != kNotNone; }
  // The type of this value: dtype and sizes; for a sequence, the elements'
  // sizes where they agree (symbolic where not, unknown rank if ranks differ).
  TensorType type() const;

  bool defined() const { return storage_ != nullptr || dtype_ != DType::kUndefined; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& sizes() const { return sizes_; }
  Shape shape() const { return Shape::from_sizes(sizes_); }
  int64_t rank() const { return static_cast<int64_t>(sizes_.size()); }
  int64_t num_elements() const { return num_elements_; }
  size_t nbytes() const { return static_cast<size_t>(num_elements_) * dtype_size(dtype_); }
  Device device() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  size_t byte_offset() const { return byte_offset_; }

  void* raw_data() const;
  template <typename T> T* data() const;

  // Views sharing this tensor's storage.
  Tensor reshape(std::vector<int64_t> sizes) const;
  Tensor slice(int64_t begin, int64_t end) const;  // rows [begin, end) of axis 0
  Tensor view(size_t byte_offset, DType dtype, std::vector<int64_t> sizes) const;

  // Deep copy into fresh storage from `allocator` (host tensors only).
  Tensor clone(Allocator& allocator = cpu_allocator()) const;
  // Same dtype, sizes and bytes (host tensors only).
  bool bitwise_equal(const Tensor& other) const;
  std::string type_string() const;  // "f32[2,3]", "seq(f32)[3 elements]", "none(f32)"

 private:
  // dtype, sizes and element count, checked; no storage yet.
  static Tensor header(DType dtype, std::vector<int64_t> sizes);

  DType dtype_ = DType::kUndefined;
  std::vector<int64_t> sizes_;
  int64_t num_elements_ = 0;
  std::shared_ptr<Storage> storage_;
  size_t byte_offset_ = 0;
  std::shared_ptr<const std::vector<Tensor>> elements_;  // set for a sequence
  enum : uint8_t { kNotNone, kNoneTensor, kNoneSequence } none_ = kNotNone;
};

void check_dtype_matches(DType actual, DType requested);
// Throws unless the tensor holds exactly `count` elements.
void check_element_count(const Tensor& tensor, size_t count);

template <typename T>
T* Tensor::data() const {
  check_dtype_matches(dtype_, DTypeOf<T>::value);
  return static_cast<T*>(raw_data());
}

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& values, std::vector<int64_t> sizes) {
  Tensor tensor(DTypeOf<T>::value, std::move(sizes));
  check_element_count(tensor, values.size());
  if constexpr (std::is_same_v<T, bool>) {
    // std::vector<bool> is bit-packed; copy element by element.
    bool* out = tensor.data<bool>();
    for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  } else {
    if (!values.empty()) std::memcpy(tensor.raw_data(), values.data(), values.size() * sizeof(T));
  }
  return tensor;
}

}  // namespace weir
