#pragma once
/// @file error.hpp
/// @brief The one exception type graphpool throws.
///
/// This header includes no CUDA header so that the host-only `plan` layer can throw it too.

#include <stdexcept>
#include <string>

namespace graphpool {

/// @brief Thrown for every graphpool failure: bad input, a CUDA call that failed, a broken contract.
///
/// The message says what failed and what to change (which slot, which branch, which size). When a
/// CUDA runtime or driver call failed, `cuda_code()` holds its status as an integer (a
/// `cudaError_t` or `CUresult` value; 0 when the failure did not come from CUDA).
class error : public std::runtime_error {
 public:
  /// @brief An error with no CUDA status.
  explicit error(const std::string& message) : std::runtime_error(message) {}

  /// @brief An error carrying the CUDA status that caused it.
  error(const std::string& message, int cuda_code) : std::runtime_error(message), cuda_code_(cuda_code) {}

  /// @return the CUDA status behind this error, 0 when there was none.
  [[nodiscard]] int cuda_code() const noexcept { return cuda_code_; }

 private:
  int cuda_code_ = 0;
};

}  // namespace graphpool
