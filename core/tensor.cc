#include "core/tensor.h"

#include <utility>

#include "core/error.h"

namespace weir {

namespace {

int64_t checked_count(const std::vector<int64_t>& sizes) {
  auto count = checked_num_elements(sizes);
  if (!count) {
    throw Error(ErrorKind::kShape,
                "tensor sizes " + format_sizes(sizes) +
                    " are negative or have more elements than fit in 64 bits");
  }
  return *count;
}

size_t checked_bytes(DType dtype, int64_t count) {
  size_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<size_t>(count), dtype_size(dtype), &bytes)) {
    throw Error(ErrorKind::kShape, "tensor of " + std::to_string(count) + " " +
                                       std::string(dtype_name(dtype)) +
                                       " elements is larger than the address space");
  }
  return bytes;
}

}  // namespace

Storage::Storage(Allocator& allocator, size_t bytes)
    : data_(allocator.allocate(bytes)), bytes_(bytes), device_(allocator.device()),
      allocator_(&allocator) {}

Storage::Storage(void* data, size_t bytes, Device device, std::shared_ptr<void> keep_alive)
    : data_(data), bytes_(bytes), device_(device), keep_alive_(std::move(keep_alive)) {}

Storage::~Storage() {
  if (allocator_ != nullptr) allocator_->deallocate(data_, bytes_);
}

Tensor Tensor::header(DType dtype, std::vector<int64_t> sizes) {
  if (dtype == DType::kUndefined) {
    throw Error(ErrorKind::kInvalidArgument, "a tensor cannot have undefined dtype");
  }
  Tensor tensor;
  tensor.dtype_ = dtype;
  tensor.sizes_ = std::move(sizes);
  tensor.num_elements_ = checked_count(tensor.sizes_);
  checked_bytes(dtype, tensor.num_elements_);  // throws when the byte count overflows
  return tensor;
}

Tensor Tensor::uninitialized(DType dtype, std::vector<int64_t> sizes, Allocator& allocator) {
  Tensor tensor = header(dtype, std::move(sizes));
  tensor.storage_ = std::make_shared<Storage>(allocator, tensor.nbytes());
  return tensor;
}

Tensor::Tensor(DType dtype, std::vector<int64_t> sizes, Allocator& allocator)
    : Tensor(uninitialized(dtype, std::move(sizes), allocator)) {
  if (nbytes() > 0 && allocator.device().type == DeviceType::kCpu) std::memset(storage_->data(), 0, nbytes());
}

Tensor Tensor::wrap(DType dtype, std::vector<int64_t> sizes, void* data, Device device,
                    std::shared_ptr<void> keep_alive) {
  Tensor tensor = header(dtype, std::move(sizes));
  size_t bytes = tensor.nbytes();
  if (bytes > 0 && data == nullptr) {
    throw Error(ErrorKind::kInvalidArgument, "cannot wrap a null pointer as a non-empty tensor");
  }
  tensor.storage_ = std::make_shared<Storage>(data, bytes, device, std::move(keep_alive));
  return tensor;
}

Device Tensor::device() const { return storage_ ? storage_->device() : Device::cpu(); }

void* Tensor::raw_data() const {
  if (!storage_) return nullptr;
  return static_cast<char*>(storage_->data()) + byte_offset_;
}

Tensor Tensor::view(size_t byte_offset, DType dtype, std::vector<int64_t> sizes) const {
  if (!storage_) throw Error(ErrorKind::kInvalidArgument, "cannot view an undefined tensor");
  Tensor out;
  out.dtype_ = dtype;
  out.sizes_ = std::move(sizes);
  out.num_elements_ = checked_count(out.sizes_);
  size_t bytes = checked_bytes(dtype, out.num_elements_);
  size_t begin = byte_offset_ + byte_offset;
  if (begin < byte_offset_ || begin > storage_->bytes() || bytes > storage_->bytes() - begin) {
    throw Error(ErrorKind::kInvalidArgument,
                "view of " + std::to_string(bytes) + " bytes at offset " +
                    std::to_string(byte_offset) + " runs past the end of a " +
                    std::to_string(storage_->bytes()) + "-byte storage");
  }
  out.storage_ = storage_;
  out.byte_offset_ = begin;
  return out;
}

Tensor Tensor::reshape(std::vector<int64_t> sizes) const {
  int64_t count = checked_count(sizes);
  if (count != num_elements_) {
    throw Error(ErrorKind::kShape, "cannot reshape " + type_string() + " (" +
                                       std::to_string(num_elements_) + " elements) to " +
                                       format_sizes(sizes) + " (" + std::to_string(count) +
                                       " elements)");
  }
  return view(0, dtype_, std::move(sizes));
}

Tensor Tensor::slice(int64_t begin, int64_t end) const {
  if (sizes_.empty()) throw Error(ErrorKind::kShape, "cannot slice a scalar tensor");
  if (begin < 0 || end < begin || end > sizes_[0]) {
    throw Error(ErrorKind::kInvalidArgument,
                "slice [" + std::to_string(begin) + ", " + std::to_string(end) +
                    ") is outside axis 0 of " + type_string());
  }
  std::vector<int64_t> sizes = sizes_;
  sizes[0] = end - begin;
  int64_t row_elements = sizes_[0] == 0 ? 0 : num_elements_ / sizes_[0];
  size_t row_bytes = static_cast<size_t>(row_elements) * dtype_size(dtype_);
  return view(static_cast<size_t>(begin) * row_bytes, dtype_, std::move(sizes));
}

Tensor Tensor::clone(Allocator& allocator) const {
  if (!defined()) return Tensor();
  if (is_none()) return *this;
  if (is_sequence()) {
    std::vector<Tensor> copies;
    for (const Tensor& element : *elements_) copies.push_back(element.clone(allocator));
    return sequence(dtype_, std::move(copies));
  }
  if (device().type != DeviceType::kCpu || allocator.device().type != DeviceType::kCpu) {
    throw Error(ErrorKind::kUnsupported, "Tensor::clone copies host tensors only");
  }
  Tensor copy(dtype_, sizes_, allocator);
  if (nbytes() > 0) std::memcpy(copy.raw_data(), raw_data(), nbytes());
  return copy;
}

bool Tensor::bitwise_equal(const Tensor& other) const {
  if (dtype_ != other.dtype_ || sizes_ != other.sizes_) return false;
  if (is_none() || other.is_none()) return none_ == other.none_;
  if (is_sequence() || other.is_sequence()) {
    if (!is_sequence() || !other.is_sequence() || elements_->size() != other.elements_->size()) return false;
    for (size_t i = 0; i < elements_->size(); ++i) {
      if (!(*elements_)[i].bitwise_equal((*other.elements_)[i])) return false;
    }
    return true;
  }
  if (nbytes() == 0) return true;
  return std::memcmp(raw_data(), other.raw_data(), nbytes()) == 0;
}

std::string Tensor::type_string() const {
  if (is_sequence()) {
    return "seq(" + std::string(dtype_name(dtype_)) + ")[" + std::to_string(elements_->size()) + " elements]";
  }
  if (is_none()) return std::string(none_ == kNoneSequence ? "none(seq(" : "none(") + std::string(dtype_name(dtype_)) +
                        (none_ == kNoneSequence ? "))" : ")");
  return std::string(dtype_name(dtype_)) + format_sizes(sizes_);
}

Tensor Tensor::sequence(DType dtype, std::vector<Tensor> elements) {
  if (dtype == DType::kUndefined) throw Error(ErrorKind::kInvalidArgument, "a sequence cannot have undefined dtype");
  for (size_t i = 0; i < elements.size(); ++i) {
    if (elements[i].dtype() != dtype || elements[i].is_sequence() || elements[i].is_none()) {
      throw Error(ErrorKind::kInvalidArgument, "element " + std::to_string(i) + " of a sequence of " +
                                                   std::string(dtype_name(dtype)) + " is " + elements[i].type_string());
    }
  }
  Tensor tensor;
  tensor.dtype_ = dtype;
  tensor.sizes_ = {0};
  tensor.elements_ = std::make_shared<const std::vector<Tensor>>(std::move(elements));
  return tensor;
}

const std::vector<Tensor>& Tensor::elements() const {
  if (!is_sequence()) throw Error(ErrorKind::kInvalidArgument, type_string() + " is not a sequence");
  return *elements_;
}

Tensor Tensor::none(DType dtype, bool sequence) {
  if (dtype == DType::kUndefined) throw Error(ErrorKind::kInvalidArgument, "an optional cannot have undefined dtype");
  Tensor tensor;
  tensor.dtype_ = dtype;
  tensor.sizes_ = {0};
  tensor.none_ = sequence ? kNoneSequence : kNoneTensor;
  return tensor;
}

TensorType Tensor::type() const {
  TensorType type{dtype_, Shape::from_sizes(sizes_)};
  if (is_none()) {
    type.shape = Shape::unknown_rank();
    type.optional = true;
    type.sequence = none_ == kNoneSequence;
  } else if (is_sequence()) {
    type.sequence = true;
    type.shape = Shape::unknown_rank();
    if (!elements_->empty()) {
      const std::vector<int64_t>& first = elements_->front().sizes();
      std::vector<Dim> dims(first.begin(), first.end());
      bool same_rank = true;
      for (const Tensor& element : *elements_) {
        if (element.sizes().size() != first.size()) {
          same_rank = false;
          break;
        }
        for (size_t axis = 0; axis < first.size(); ++axis) {
          if (element.sizes()[axis] != first[axis]) dims[axis] = Dim::symbol("?");
        }
      }
      if (same_rank) type.shape = Shape(std::move(dims));
    }
  }
  return type;
}

void check_dtype_matches(DType actual, DType requested) {
  if (actual != requested) {
    throw Error(ErrorKind::kInvalidArgument,
                "tensor holds " + std::string(dtype_name(actual)) + " elements, not " +
                    std::string(dtype_name(requested)));
  }
}

void check_element_count(const Tensor& tensor, size_t count) {
  if (static_cast<size_t>(tensor.num_elements()) != count) {
    throw Error(ErrorKind::kShape, "tensor " + tensor.type_string() + " needs " +
                                       std::to_string(tensor.num_elements()) + " values, got " +
                                       std::to_string(count));
  }
}

}  // namespace weir
