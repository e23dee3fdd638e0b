#pragma once
/// @file vmm_driver.hpp
/// @brief The CUDA driver's virtual memory management calls, reached through
/// cudaGetDriverEntryPointByVersion so programs do not link libcuda and still start without a driver.

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>

#include "graphpool/detail/cuda_check.hpp"
#include "graphpool/error.hpp"

namespace graphpool {

namespace detail {

/// The driver's virtual memory calls, looked up once through the runtime.
struct vmm_driver {
  decltype(&::cuMemCreate) mem_create = nullptr;
  decltype(&::cuMemRelease) mem_release = nullptr;
  decltype(&::cuMemAddressReserve) address_reserve = nullptr;
  decltype(&::cuMemAddressFree) address_free = nullptr;
  decltype(&::cuMemMap) map = nullptr;
  decltype(&::cuMemUnmap) unmap = nullptr;
  decltype(&::cuMemSetAccess) set_access = nullptr;
  decltype(&::cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&::cuGetErrorName) error_name = nullptr;

  [[nodiscard]] static const vmm_driver& get() {
    static const vmm_driver driver = load();
    return driver;
  }

  [[nodiscard]] std::string describe(CUresult status) const {
    const char* name = name_of(status);
    return name != nullptr ? name : "CUresult " + std::to_string(static_cast<int>(status));
  }

  /// @brief For destructors and other noexcept paths, as GRAPHPOOL_CUDA_REPORT: a failed `call` is reported
  /// on `to` as "graphpool: <context>: <call> failed with <name>", never thrown; allocates nothing.
  void report(CUresult status, const char* call, const char* context, std::FILE* to = stderr) const noexcept {
    if (status == CUDA_SUCCESS) return;
    const char* name = name_of(status);
    if (name != nullptr) {
      std::fprintf(to, "graphpool: %s: %s failed with %s\n", context, call, name);
    } else {
      std::fprintf(to, "graphpool: %s: %s failed with CUresult %d\n", context, call, static_cast<int>(status));
    }
  }

 private:
  // The driver's name of `status` (CUDA_ERROR_...), or null when it has none.
  [[nodiscard]] const char* name_of(CUresult status) const noexcept {
    const char* name = nullptr;
    if (error_name != nullptr) error_name(status, &name);
    return name;
  }

  template <class Function>
  static void lookup(const char* symbol, Function& function) {
    void* address = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    GRAPHPOOL_CUDA_TRY(cudaGetDriverEntryPointByVersion(symbol, &address, 12000, cudaEnableDefault, &found),
                       std::string("looking up the driver's ") + symbol);
    if (found != cudaDriverEntryPointSuccess || address == nullptr) {
      throw error(std::string("the CUDA driver has no ") + symbol + "; virtual memory management needs driver 12.0 or later");
    }
    function = reinterpret_cast<Function>(address);
  }

  static vmm_driver load() {
    vmm_driver d;
    lookup("cuMemCreate", d.mem_create);
    lookup("cuMemRelease", d.mem_release);
    lookup("cuMemAddressReserve", d.address_reserve);
    lookup("cuMemAddressFree", d.address_free);
    lookup("cuMemMap", d.map);
    lookup("cuMemUnmap", d.unmap);
    lookup("cuMemSetAccess", d.set_access);
    lookup("cuMemGetAllocationGranularity", d.granularity);
    lookup("cuGetErrorName", d.error_name);
    return d;
  }
};

}  // namespace detail

}  // namespace graphpool
