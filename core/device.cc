#include "core/device.h"

#include <charconv>

#include "core/error.h"

namespace weir {

Device Device::parse(std::string_view text) {
  auto fail = [&]() -> Error {
    return Error(ErrorKind::kInvalidArgument,
                 "device '" + std::string(text) + "' is not of the form cpu[:N] or cuda[:N]");
  };
  std::string_view type_name = text;
  int index = 0;
  if (size_t colon = text.find(':'); colon != std::string_view::npos) {
    type_name = text.substr(0, colon);
    std::string_view digits = text.substr(colon + 1);
    if (digits.empty()) throw fail();
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec != std::errc() || end != digits.data() + digits.size() || index < 0) throw fail();
  }
  if (type_name == "cpu") return cpu(index);
  if (type_name == "cuda") return cuda(index);
  throw fail();
}

std::string Device::to_string() const {
  return std::string(type == DeviceType::kCpu ? "cpu" : "cuda") + ":" + std::to_string(index);
}

}  // namespace weir
