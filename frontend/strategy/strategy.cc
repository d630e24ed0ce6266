#include "frontend/strategy/strategy.h"

#include <cctype>

#include "core/error.h"

namespace weir {

RecomputeStrategy parse_recompute(const std::string& text) {
  RecomputeStrategy strategy;
  if (text.empty() || text == "off") return strategy;
  if (text == "auto") {
    strategy.mode = RecomputeMode::kAuto;
    return strategy;
  }
  strategy.mode = RecomputeMode::kCheckpoints;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string name = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (name.empty()) {
      throw Error(ErrorKind::kInvalidArgument, "--recompute '" + text + "': an empty checkpoint name (expected auto, off "
                                               "or NAME[,NAME...])");
    }
    strategy.checkpoints.push_back(name);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return strategy;
}

int64_t parse_byte_size(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  std::string suffix = text.substr(digits);
  int shift = suffix.empty() || suffix == "B" ? 0
              : (suffix == "K" || suffix == "KiB") ? 10
              : (suffix == "M" || suffix == "MiB") ? 20
              : (suffix == "G" || suffix == "GiB") ? 30
                                                    : -1;
  if (digits == 0 || digits > 15 || shift < 0) {
    throw Error(ErrorKind::kInvalidArgument, "'" + text + "' is not a byte size (expected e.g. 1073741824, 512M or 2G)");
  }
  int64_t value = std::stoll(text.substr(0, digits));
  if (value <= 0 || value > (int64_t{1} << (62 - shift))) {
    throw Error(ErrorKind::kInvalidArgument, "'" + text + "' is not a positive byte size in range");
  }
  return value << shift;
}

}  // namespace weir
