// Device — where a tensor lives or a node runs: "cpu:N" or "cuda:N".
//
//   weir::Device d = weir::Device::parse("cuda:1");
//   d.type == weir::DeviceType::kCuda;   d.index == 1;
//   d.to_string();                       // "cuda:1"
//   weir::Device::cpu();                 // cpu:0
//
// Several cpu:N devices in one process are virtual devices: they share the
// host's memory and cores, and let multi-device plans run without GPUs.
#pragma once

#include <string>
#include <string_view>

namespace weir {

enum class DeviceType { kCpu, kCuda };

struct Device {
  DeviceType type = DeviceType::kCpu;
  int index = 0;

  static Device cpu(int index = 0) { return {DeviceType::kCpu, index}; }
  static Device cuda(int index = 0) { return {DeviceType::kCuda, index}; }
  // Parses "cpu", "cpu:N", "cuda", "cuda:N"; throws weir::Error otherwise.
  static Device parse(std::string_view text);

  std::string to_string() const;
  bool operator==(const Device& other) const = default;
};

}  // namespace weir
