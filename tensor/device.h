#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

namespace strata {

enum class DeviceType : int8_t { CPU = 0, CUDA = 1 };
inline constexpr int kNumDeviceTypes = 2;

struct Device {
  DeviceType type = DeviceType::CPU;
  int8_t index = 0;

  constexpr Device() = default;
  constexpr Device(DeviceType t, int index_ = 0) : type(t), index(static_cast<int8_t>(index_)) {}
  // "cpu", "cuda", "cuda:1"
  explicit Device(const std::string& spec);

  constexpr bool is_cpu() const { return type == DeviceType::CPU; }
  constexpr bool is_cuda() const { return type == DeviceType::CUDA; }
  std::string str() const;

  friend constexpr bool operator==(Device a, Device b) {
    return a.type == b.type && a.index == b.index;
  }
};

inline constexpr Device kCPU{DeviceType::CPU, 0};
constexpr Device cuda(int index = 0) { return Device{DeviceType::CUDA, index}; }

std::ostream& operator<<(std::ostream& out, Device d);

// The number of usable CUDA devices: 0 when Strata was built without CUDA or
// when no GPU or driver is present.
int cuda_device_count();
inline bool cuda_is_available() { return cuda_device_count() > 0; }

}  // namespace strata
